/*
 * names.c — static English names for error codes and for the kinds stored in
 * snapshots (edge, root, class kinds). Used by the CLI, JSON output and docs.
 */
#include "heapgraph.h"

const char *hg_error_string(int code) {
  switch (code) {
    case HG_OK: return "success";
    case HG_EINVAL: return "invalid argument or call out of order";
    case HG_ENOMEM: return "out of memory or scratch budget exhausted";
    case HG_EIO: return "input/output error";
    case HG_ENOSPC: return "no space left on device or file size limit reached";
    case HG_EFORMAT: return "malformed snapshot";
    case HG_ETRUNCATED: return "snapshot is truncated";
    case HG_ECHECKSUM: return "snapshot checksum mismatch";
    case HG_EVERSION: return "not a heapgraph snapshot or unsupported version";
    case HG_ELIMIT: return "a count or size exceeds the supported limit";
    case HG_ETIMEOUT: return "a thread could not be paused in time";
    case HG_EBUSY: return "allocator locks stayed held; capture gave up";
    case HG_EUNSUPPORTED: return "unsupported platform or allocator (partial snapshot)";
    case HG_EPERM: return "permission denied";
    case HG_ENOTFOUND: return "not found";
    case HG_EINTERNAL: return "internal error (a heapgraph bug)";
    case HG_ENOENT: return "the output file's directory does not exist";
    case HG_ENOTREG: return "the output path exists and is not a regular file (not replaced)";
    case HG_ECHILDTIME: return "the capture child did not finish in time (child_timeout_ms)";
    default: return "unknown error";
  }
}

const char *hg_edge_kind_name(uint32_t kind) {
  static const char *const names[] = {"conservative", "interior", "strong", "weak", "unowned"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

const char *hg_root_kind_name(uint32_t kind) {
  static const char *const names[] = {"stack", "register", "global", "tls", "other"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

const char *hg_class_kind_name(uint32_t kind) {
  static const char *const names[] = {"other", "objc", "swift", "c++", "cf"};
  return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}
