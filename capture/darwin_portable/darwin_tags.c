/*
 * darwin_tags.c — what a Darwin VM region's user_tag means: the names vmmap
 * shows ("MALLOC_TINY", "Stack", "CoreAnimation" …) and the region kind the
 * capture gives it. Tag numbers are those of <mach/vm_statistics.h>
 * (VM_MEMORY_*), listed here by number so this file builds on any OS.
 *
 * Pure and portable (unit-tested on Linux); never calls malloc.
 */
#include <string.h>

#include "capture/darwin_portable/darwin_portable.h"

struct tag_name {
  uint16_t tag;
  const char *name;
};

/* Sorted by tag. */
static const struct tag_name names[] = {
    {1, "MALLOC"},
    {2, "MALLOC_SMALL"},
    {3, "MALLOC_LARGE"},
    {4, "MALLOC_HUGE"},
    {5, "SBRK"},
    {6, "MALLOC_REALLOC"},
    {7, "MALLOC_TINY"},
    {8, "MALLOC_LARGE_REUSABLE"},
    {9, "MALLOC_LARGE_REUSED"},
    {10, "Performance tool data"},
    {11, "MALLOC_NANO"},
    {12, "MALLOC_MEDIUM"},
    {13, "MALLOC_PROB_GUARD"},
    {20, "Mach message"},
    {21, "IOKit"},
    {30, "Stack"},
    {31, "Guard"},
    {32, "Shared pmap"},
    {33, "Dylib"},
    {34, "ObjC dispatching code"},
    {35, "Unshared pmap"},
    {40, "AppKit"},
    {41, "Foundation"},
    {42, "CoreGraphics"},
    {43, "CoreServices"},
    {44, "Java"},
    {45, "CoreData"},
    {46, "CoreData Object IDs"},
    {50, "ATS (font support)"},
    {51, "CoreAnimation"},
    {52, "CG image"},
    {53, "TCMalloc"},
    {54, "CG raster data"},
    {55, "CG shared images"},
    {56, "CG framebuffers"},
    {57, "CG backingstores"},
    {58, "CG xalloc"},
    {60, "dyld private memory"},
    {61, "dyld malloc memory"},
    {62, "SQLite page cache"},
    {63, "JavaScriptCore"},
    {64, "JS JIT generated code"},
    {65, "JS VM register file"},
    {66, "OpenGL GLSL"},
    {67, "OpenCL"},
    {68, "CoreImage"},
    {69, "WebCore purgeable data"},
    {70, "ImageIO"},
    {71, "CoreProfile"},
    {72, "assetsd"},
    {73, "OS Alloc Once"},
    {74, "Dispatch continuations"},
    {75, "Accelerate framework"},
    {76, "CoreUI image data"},
    {77, "CoreUI image file"},
    {78, "Activity Tracing"},
    {79, "RawCamera"},
    {80, "Corpse info"},
    {81, "ASL"},
    {82, "Swift runtime"},
    {83, "Swift metadata"},
    {84, "DHMM"},
    {86, "SceneKit"},
    {87, "Skywalk networking"},
    {88, "IOSurface"},
    {89, "libnetwork"},
    {90, "Audio"},
    {91, "VideoBitStream"},
    {92, "CoreMedia XPC"},
    {93, "CoreMedia RPC"},
    {94, "CoreMedia memory pool"},
    {95, "CoreMedia read cache"},
    {96, "CoreMedia crabs"},
    {97, "QuickLook thumbnails"},
    {98, "Accounts framework"},
    {99, "Sanitizer"},
    {100, "IOAccelerator"},
    {101, "CoreMedia regwarp"},
    {102, "EmbeddedAcousticRecognition"},
    {103, "CoreUI cached image data"},
    {104, "ColorSync"},
    {105, "Backtrace info"},
    {230, "Rosetta"},
    {231, "Rosetta thread context"},
    {232, "Rosetta indirect branch map"},
    {233, "Rosetta return stack"},
    {234, "Rosetta JIT"},
    {235, "Rosetta user LDT"},
    {236, "Rosetta arena"},
    {239, "Rosetta 10"},
};

const char *_hg_darwin_tag_name(uint32_t tag) {
  size_t lo = 0, hi = sizeof names / sizeof names[0];
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (names[mid].tag == tag) return names[mid].name;
    if (names[mid].tag < tag) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

const char *_hg_darwin_tag_label(uint32_t tag, char *buf, size_t size) {
  const char *n = _hg_darwin_tag_name(tag);
  if (n) return n;
  if (tag == 0) return "VM_ALLOCATE";
  /* no snprintf: this runs while the process is frozen */
  const char *prefix = tag >= 240 && tag <= 255 ? "Application Specific " : "Memory Tag ";
  uint32_t v = tag >= 240 && tag <= 255 ? tag - 239 : tag;
  char digits[12];
  size_t nd = 0;
  do digits[nd++] = (char)('0' + v % 10); while ((v /= 10) != 0);
  size_t np = strlen(prefix);
  if (size < np + nd + 1) return "Memory Tag";
  memcpy(buf, prefix, np);
  for (size_t i = 0; i < nd; i++) buf[np + i] = digits[nd - 1 - i];
  buf[np + nd] = 0;
  return buf;
}

int _hg_darwin_tag_is_malloc(uint32_t tag) {
  switch (tag) {
    case 1: case 2: case 3: case 4: case 6: case 7: case 8: case 9: case 11: case 12: case 13:
      return 1;
    default:
      return 0;
  }
}

uint32_t _hg_darwin_tag_kind(uint32_t tag) {
  if (_hg_darwin_tag_is_malloc(tag)) return HG_RK_HEAP;
  if (tag == 30) return HG_RK_STACK;
  return HG_RK_OTHER;
}
