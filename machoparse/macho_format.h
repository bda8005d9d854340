/*
 * macho_format.h — on-disk Mach-O constants, written from the published
 * format (mach-o/loader.h, fixup-chains.h, fat.h facts), never Apple headers.
 *
 * Only numbers live here: the parser reads every structure field by field
 * through the bounds-checked little-endian readers in macho_internal.h, so no
 * on-disk struct is ever overlaid on untrusted bytes.
 */
#ifndef HG_MACHO_FORMAT_H
#define HG_MACHO_FORMAT_H

/* ---- Headers ---- */
#define MH_MAGIC 0xfeedfaceu
#define MH_CIGAM 0xcefaedfeu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM_64 0xcffaedfeu
#define FAT_MAGIC 0xcafebabeu     /* stored big-endian                     */
#define FAT_MAGIC_64 0xcafebabfu  /* stored big-endian                     */
#define MH_HEADER64_SIZE 32u
#define FAT_ARCH_SIZE 20u
#define FAT_ARCH64_SIZE 32u

#define CPU_ARCH_ABI64 0x01000000u
#define CPU_TYPE_X86 7u
#define CPU_TYPE_ARM 12u
#define CPU_TYPE_X86_64 (CPU_TYPE_X86 | CPU_ARCH_ABI64)
#define CPU_TYPE_ARM64 (CPU_TYPE_ARM | CPU_ARCH_ABI64)
#define CPU_SUBTYPE_MASK 0xff000000u  /* capability bits (LIB64, PTRAUTH ABI) */
#define CPU_SUBTYPE_ARM64E 2u
#define CPU_SUBTYPE_X86_64_H 8u

/* ---- Load commands ---- */
#define LC_REQ_DYLD 0x80000000u
#define LC_SEGMENT 0x1u
#define LC_SYMTAB 0x2u
#define LC_DYSYMTAB 0xbu
#define LC_LOAD_DYLIB 0xcu
#define LC_ID_DYLIB 0xdu
#define LC_LOAD_WEAK_DYLIB (0x18u | LC_REQ_DYLD)
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu
#define LC_REEXPORT_DYLIB (0x1fu | LC_REQ_DYLD)
#define LC_LAZY_LOAD_DYLIB 0x20u
#define LC_DYLD_INFO 0x22u
#define LC_DYLD_INFO_ONLY (0x22u | LC_REQ_DYLD)
#define LC_LOAD_UPWARD_DYLIB (0x23u | LC_REQ_DYLD)
#define LC_VERSION_MIN_MACOSX 0x24u
#define LC_VERSION_MIN_IPHONEOS 0x25u
#define LC_VERSION_MIN_TVOS 0x2fu
#define LC_VERSION_MIN_WATCHOS 0x30u
#define LC_BUILD_VERSION 0x32u
#define LC_DYLD_EXPORTS_TRIE (0x33u | LC_REQ_DYLD)
#define LC_DYLD_CHAINED_FIXUPS (0x34u | LC_REQ_DYLD)

#define SEGMENT64_CMD_SIZE 72u
#define SECTION64_SIZE 80u

/* ---- Rebase / bind opcodes (LC_DYLD_INFO) ---- */
#define OPCODE_MASK 0xf0u
#define IMMEDIATE_MASK 0x0fu

#define REBASE_TYPE_POINTER 1u
#define REBASE_TYPE_TEXT_ABSOLUTE32 2u
#define REBASE_TYPE_TEXT_PCREL32 3u
#define REBASE_OPCODE_DONE 0x00u
#define REBASE_OPCODE_SET_TYPE_IMM 0x10u
#define REBASE_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB 0x20u
#define REBASE_OPCODE_ADD_ADDR_ULEB 0x30u
#define REBASE_OPCODE_ADD_ADDR_IMM_SCALED 0x40u
#define REBASE_OPCODE_DO_REBASE_IMM_TIMES 0x50u
#define REBASE_OPCODE_DO_REBASE_ULEB_TIMES 0x60u
#define REBASE_OPCODE_DO_REBASE_ADD_ADDR_ULEB 0x70u
#define REBASE_OPCODE_DO_REBASE_ULEB_TIMES_SKIPPING_ULEB 0x80u

#define BIND_TYPE_POINTER 1u
#define BIND_SPECIAL_DYLIB_SELF 0
#define BIND_SYMBOL_FLAGS_WEAK_IMPORT 0x1u
#define BIND_SYMBOL_FLAGS_NON_WEAK_DEFINITION 0x8u
#define BIND_OPCODE_DONE 0x00u
#define BIND_OPCODE_SET_DYLIB_ORDINAL_IMM 0x10u
#define BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB 0x20u
#define BIND_OPCODE_SET_DYLIB_SPECIAL_IMM 0x30u
#define BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM 0x40u
#define BIND_OPCODE_SET_TYPE_IMM 0x50u
#define BIND_OPCODE_SET_ADDEND_SLEB 0x60u
#define BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB 0x70u
#define BIND_OPCODE_ADD_ADDR_ULEB 0x80u
#define BIND_OPCODE_DO_BIND 0x90u
#define BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB 0xa0u
#define BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED 0xb0u
#define BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB 0xc0u
#define BIND_OPCODE_THREADED 0xd0u
#define BIND_SUBOPCODE_THREADED_SET_BIND_ORDINAL_TABLE_SIZE_ULEB 0x00u
#define BIND_SUBOPCODE_THREADED_APPLY 0x01u
#define BIND_THREADED_TABLE_MAX 65535u   /* what dyld accepts               */

/* ---- Chained fixups (LC_DYLD_CHAINED_FIXUPS) ---- */
#define CHAINED_HEADER_SIZE 28u
#define CHAINED_IMPORT 1u
#define CHAINED_IMPORT_ADDEND 2u
#define CHAINED_IMPORT_ADDEND64 3u
#define CHAINED_SYMBOLS_PLAIN 0u
#define CHAINED_STARTS_SEG_HEADER 22u   /* bytes before page_start[]        */
#define CHAINED_PAGE_NONE 0xffffu
#define CHAINED_PAGE_MULTI 0x8000u
#define CHAINED_PAGE_LAST 0x8000u

#define CHAINED_PTR_ARM64E 1u
#define CHAINED_PTR_64 2u
#define CHAINED_PTR_64_OFFSET 6u
#define CHAINED_PTR_ARM64E_USERLAND 9u
#define CHAINED_PTR_ARM64E_USERLAND24 12u

#endif
