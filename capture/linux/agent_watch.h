/*
 * agent_watch.h — the preload agent's watcher and uploader
 * (agent_watch.c), started from agent.c's constructor.
 */
#ifndef HG_CAPTURE_LINUX_AGENT_WATCH_H
#define HG_CAPTURE_LINUX_AGENT_WATCH_H

#include <stdint.h>

/* Reads HEAPGRAPH_WATCH*, HEAPGRAPH_SPOOL*, HEAPGRAPH_POLICY_*,
 * HEAPGRAPH_APP* and HEAPGRAPH_UPLOAD_*; starts the watcher and/or the
 * upload thread. 1 started, 0 not asked for, -1 a bad value (reported). */
int _hg_agent_watch_init(uint32_t mode, uint32_t omit);

#endif
