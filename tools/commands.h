/*
 * commands.h — the heapgraph CLI's subcommand table.
 *
 * Each subcommand lives in its own tools/cmd_NAME.c and defines
 *   int cmd_NAME(int argc, char **argv);   (argv[0] is the subcommand name)
 * returning the process exit status. To add one, add a line to HG_COMMANDS.
 */
#ifndef HG_TOOLS_COMMANDS_H
#define HG_TOOLS_COMMANDS_H

/* X(name, one-line summary) */
#define HG_COMMANDS(X)                                                        \
  X(view,       "explore a snapshot in the browser (local server, token URL)") \
  X(top,        "nodes and classes by retained size (dominator tree)")      \
  X(dominators, "a node's dominator chain and what it dominates")          \
  X(leaks,      "unreachable blocks folded into root leaks (exit 1 if any)") \
  X(cycles,     "reference cycles over retaining edges, biggest first")    \
  X(path,       "shortest retaining paths from the roots to a node")       \
  X(show,       "one node: size, class, region, in and out references")   \
  X(diff,       "per-class count and byte changes between two snapshots")  \
  X(export,     "write heapsnapshot (DevTools), dot (Graphviz) or json")   \
  X(capture,  "take a snapshot: how-to, self-capture, signal a running agent") \
  X(run,      "run a program with the capture agent (LD_PRELOAD)")            \
  X(macho,    "Mach-O fixups, bind tables, C++ type_info (llvm-objdump rows)") \
  X(info,     "metadata, counts, sizes, checksum status")                     \
  X(verify,   "exit 0 if the snapshot is valid, else the reason on stderr")   \
  X(classes,  "histogram by class: count and bytes, biggest first")           \
  X(regions,  "VM regions summary by tag/name")                               \
  X(nodes,    "list nodes (one JSON object per line with --json)")            \
  X(edges,    "list edges (one JSON object per line with --json)")          \
  X(stacks,   "allocation stacks: live count, bytes, retained bytes per stack") \
  X(upload,   "send snapshots (a file or a spool) to the backend (libcurl)")   \
  X(msl,      "MallocStackLogging .index file (libmalloc <= 166): live blocks per stack id") \
  X(fleet,    "issues across many snapshots: ranked, new/regressed per version") \
  X(serve,    "the backend: snapshot intake, store, analysis workers (docs/serve.md)")

#define HG_DECLARE_COMMAND(name, summary) int cmd_##name(int argc, char **argv);
HG_COMMANDS(HG_DECLARE_COMMAND)
#undef HG_DECLARE_COMMAND

#endif
