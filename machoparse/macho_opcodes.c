/*
 * macho_opcodes.c — the LC_DYLD_INFO rebase, bind, weak-bind and lazy-bind
 * opcode interpreters, including BIND_OPCODE_THREADED (ordinal table +
 * THREADED_APPLY chains of old arm64e binaries), as a pull iterator that
 * yields one fixup per call.
 *
 * Never allocates: the threaded ordinal table is not copied but re-read from
 * the opcode stream on demand (with a 16-entry cache in the iterator). Every
 * ULEB/SLEB, segment index, ordinal, string and location is bounds-checked;
 * the number of fixups per table is capped by the image's file-backed size
 * (macho_fixup_budget) so ULEB_TIMES_SKIPPING loops cannot run away.
 */
#include <string.h>

#include "heapgraph.h"
#include "machoparse/macho_format.h"
#include "machoparse/macho_internal.h"

#define PTR_SIZE 8u

/* Opcode interpreter registers. */
struct regs {
  uint32_t seg;
  int seg_set;
  uint64_t seg_off;
  uint32_t type, flags;
  int64_t ordinal, addend;
  const char *symbol;
};

enum action { A_NONE, A_END, A_EMIT, A_STRONG, A_TABLE_ENTRY, A_APPLY };

static uint64_t efoff(const struct macho_fixup_iter *it, uint64_t off) {
  return it->img->loaded ? off : it->img->slice_off + off;
}

static int leb_fail(struct macho_fixup_iter *it, int rc, uint32_t at) {
  return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "%s",
                    rc == -1 ? "LEB128 runs past the end of the opcodes" : "LEB128 value overflows 64 bits");
}

static void regs_from(struct regs *r, const struct macho_opcode_state *op) {
  r->seg = op->seg; r->seg_set = op->seg_set; r->seg_off = op->seg_off;
  r->type = op->type; r->flags = op->sym_flags; r->ordinal = op->ordinal;
  r->addend = op->addend; r->symbol = op->symbol;
}

static void regs_to(struct macho_opcode_state *op, const struct regs *r) {
  op->seg = r->seg; op->seg_set = r->seg_set; op->seg_off = r->seg_off;
  op->type = r->type; op->sym_flags = r->flags; op->ordinal = r->ordinal;
  op->addend = r->addend; op->symbol = r->symbol;
}

/* Decodes one opcode at *pos of a rebase stream. */
static int rebase_step(struct macho_fixup_iter *it, const uint8_t *p, uint32_t end, uint32_t *pos,
                       struct regs *r, uint64_t *repeat, uint64_t *skip) {
  uint32_t at = *pos;
  uint8_t b = p[(*pos)++];
  uint32_t op = b & OPCODE_MASK, imm = b & IMMEDIATE_MASK;
  uint64_t a = 0, c = 0;
  int rc;
  switch (op) {
  case REBASE_OPCODE_DONE:
    return A_END;
  case REBASE_OPCODE_SET_TYPE_IMM:
    if (imm < REBASE_TYPE_POINTER || imm > REBASE_TYPE_TEXT_PCREL32)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bad rebase type %u", imm);
    r->type = imm;
    return A_NONE;
  case REBASE_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    if (imm >= it->img->segment_count)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "rebase segment index %u out of range", imm);
    r->seg = imm; r->seg_set = 1; r->seg_off = a;
    return A_NONE;
  case REBASE_OPCODE_ADD_ADDR_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    r->seg_off += a;
    return A_NONE;
  case REBASE_OPCODE_ADD_ADDR_IMM_SCALED:
    r->seg_off += (uint64_t)imm * PTR_SIZE;
    return A_NONE;
  case REBASE_OPCODE_DO_REBASE_IMM_TIMES:
    *repeat = imm; *skip = PTR_SIZE;
    return A_EMIT;
  case REBASE_OPCODE_DO_REBASE_ULEB_TIMES:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    *repeat = a; *skip = PTR_SIZE;
    return A_EMIT;
  case REBASE_OPCODE_DO_REBASE_ADD_ADDR_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    *repeat = 1; *skip = a + PTR_SIZE;
    return A_EMIT;
  case REBASE_OPCODE_DO_REBASE_ULEB_TIMES_SKIPPING_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a)) || (rc = macho_uleb(p, end, pos, &c)))
      return leb_fail(it, rc, at);
    *repeat = a; *skip = c + PTR_SIZE;
    return A_EMIT;
  default:
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bad rebase opcode 0x%02x", b);
  }
}

/* Decodes one opcode at *pos of a bind stream. */
static int bind_step(struct macho_fixup_iter *it, const uint8_t *p, uint32_t end, uint32_t *pos,
                     struct regs *r, uint64_t *repeat, uint64_t *skip, uint64_t *table) {
  const struct macho_image *img = it->img;
  uint32_t at = *pos;
  uint8_t b = p[(*pos)++];
  uint32_t op = b & OPCODE_MASK, imm = b & IMMEDIATE_MASK;
  uint64_t a = 0, c = 0;
  int64_t s = 0;
  int rc;
  long len;
  switch (op) {
  case BIND_OPCODE_DONE:
    return it->op.kind == MACHO_FIXUP_LAZY_BIND ? A_NONE : A_END;
  case BIND_OPCODE_SET_DYLIB_ORDINAL_IMM:
  case BIND_OPCODE_SET_DYLIB_ORDINAL_ULEB:
    if (op == BIND_OPCODE_SET_DYLIB_ORDINAL_IMM) a = imm;
    else if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    if (a > img->dylib_count)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at),
                        "bad library ordinal %llu (image has %u dylibs)", (unsigned long long)a,
                        img->dylib_count);
    r->ordinal = (int64_t)a;
    return A_NONE;
  case BIND_OPCODE_SET_DYLIB_SPECIAL_IMM:
    r->ordinal = imm ? (int8_t)(0xf0 | imm) : 0;
    if (r->ordinal < -3)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "unknown special ordinal %lld",
                        (long long)r->ordinal);
    return A_NONE;
  case BIND_OPCODE_SET_SYMBOL_TRAILING_FLAGS_IMM:
    len = macho_strlen(p, *pos, end);
    if (len < 0)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "symbol name runs past the end of the opcodes");
    r->symbol = (const char *)p + *pos;
    *pos += (uint32_t)len + 1;
    r->flags = imm;
    if (it->op.kind == MACHO_FIXUP_WEAK_BIND && (imm & BIND_SYMBOL_FLAGS_NON_WEAK_DEFINITION))
      return A_STRONG;
    return A_NONE;
  case BIND_OPCODE_SET_TYPE_IMM:
    if (imm < BIND_TYPE_POINTER || imm > 3)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bad bind type %u", imm);
    r->type = imm;
    return A_NONE;
  case BIND_OPCODE_SET_ADDEND_SLEB:
    if ((rc = macho_sleb(p, end, pos, &s))) return leb_fail(it, rc, at);
    r->addend = s;
    return A_NONE;
  case BIND_OPCODE_SET_SEGMENT_AND_OFFSET_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    if (imm >= img->segment_count)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bind segment index %u out of range", imm);
    r->seg = imm; r->seg_set = 1; r->seg_off = a;
    return A_NONE;
  case BIND_OPCODE_ADD_ADDR_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    r->seg_off += a;
    return A_NONE;
  case BIND_OPCODE_DO_BIND:
    if (table && *table) return A_TABLE_ENTRY;
    *repeat = 1; *skip = PTR_SIZE;
    return A_EMIT;
  case BIND_OPCODE_DO_BIND_ADD_ADDR_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
    *repeat = 1; *skip = a + PTR_SIZE;
    return A_EMIT;
  case BIND_OPCODE_DO_BIND_ADD_ADDR_IMM_SCALED:
    *repeat = 1; *skip = (uint64_t)imm * PTR_SIZE + PTR_SIZE;
    return A_EMIT;
  case BIND_OPCODE_DO_BIND_ULEB_TIMES_SKIPPING_ULEB:
    if ((rc = macho_uleb(p, end, pos, &a)) || (rc = macho_uleb(p, end, pos, &c)))
      return leb_fail(it, rc, at);
    *repeat = a; *skip = c + PTR_SIZE;
    return A_EMIT;
  case BIND_OPCODE_THREADED:
    if (imm == BIND_SUBOPCODE_THREADED_SET_BIND_ORDINAL_TABLE_SIZE_ULEB) {
      if ((rc = macho_uleb(p, end, pos, &a))) return leb_fail(it, rc, at);
      if (a == 0 || a > BIND_THREADED_TABLE_MAX)
        return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "threaded ordinal table size %llu",
                          (unsigned long long)a);
      if (table) *table = a;
      return A_NONE;
    }
    if (imm == BIND_SUBOPCODE_THREADED_APPLY) return A_APPLY;
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bad threaded bind subopcode %u", imm);
  default:
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, at), "bad bind opcode 0x%02x", b);
  }
}

void macho_opcodes_start(struct macho_fixup_iter *it, unsigned source) {
  struct macho_opcode_state *op = &it->op;
  const struct macho_image *img = it->img;
  memset(op, 0, sizeof *op);
  const struct macho_range *r = &img->rebase;
  op->kind = MACHO_FIXUP_REBASE;
  if (source == MACHO_SRC_BIND) { r = &img->bind; op->kind = MACHO_FIXUP_BIND; }
  if (source == MACHO_SRC_WEAK_BIND) { r = &img->weak_bind; op->kind = MACHO_FIXUP_WEAK_BIND; }
  if (source == MACHO_SRC_LAZY_BIND) { r = &img->lazy_bind; op->kind = MACHO_FIXUP_LAZY_BIND; }
  op->start = op->pos = r->off;
  op->end = r->off + r->size;
  op->budget = macho_fixup_budget(img);
  op->done = !img->has_dyld_info || r->size == 0;
  for (int i = 0; i < 16; i++) it->tcache[i].valid = 0;
}

/* Fills the location fields of *out for segment offset seg_off. */
static int locate(struct macho_fixup_iter *it, struct macho_fixup *out, uint64_t seg_off, uint32_t len) {
  struct macho_opcode_state *op = &it->op;
  const struct macho_segment *s = &it->img->segments[op->seg];
  if (!op->seg_set)
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos), "fixup before any SET_SEGMENT opcode");
  if (seg_off > s->vmsize || len > s->vmsize - seg_off)
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos),
                      "fixup at offset 0x%llx is outside segment %s (size 0x%llx)",
                      (unsigned long long)seg_off, s->name, (unsigned long long)s->vmsize);
  if (op->budget-- == 0)
    return macho_fail(&it->err, HG_ELIMIT, efoff(it, op->op_pos),
                      "more fixups than the image can hold (runaway opcode loop)");
  out->segment = op->seg;
  out->vmaddr = s->vmaddr + seg_off;
  int64_t fo = macho_vm_to_off(it->img, op->seg, out->vmaddr, len);
  out->file_off = fo < 0 ? 0 : (uint64_t)fo + (it->img->loaded ? 0 : it->img->slice_off);
  return 0;
}

/* The threaded ordinal table entry `index` in force at the APPLY at
 * op->op_pos: replays the stream from its start (entries are DO_BINDs after
 * the latest SET_BIND_ORDINAL_TABLE_SIZE). */
static int table_entry(struct macho_fixup_iter *it, uint32_t index, struct regs *found) {
  struct macho_opcode_state *op = &it->op;
  unsigned slot = index % 16;
  if (it->tcache[slot].valid && it->tcache[slot].index == index) {
    found->symbol = it->tcache[slot].symbol;
    found->ordinal = it->tcache[slot].ordinal;
    found->addend = it->tcache[slot].addend;
    found->flags = it->tcache[slot].flags;
    return 0;
  }
  const uint8_t *p = macho_bytes(it->img, op->start, op->end - op->start);
  if (!p) return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->start), "opcodes unreadable");
  p -= op->start;
  struct regs r = {0};
  uint32_t pos = op->start, count = 0;
  uint64_t table = 0, rep = 0, skip = 0;
  int have = 0;
  while (pos < op->table_start) {
    uint64_t before = table;
    int a = bind_step(it, p, op->end, &pos, &r, &rep, &skip, &table);
    if (a < 0) return a;
    if (table != before) { count = 0; have = 0; }
    if (a == A_TABLE_ENTRY) {
      if (count == index) { *found = r; have = 1; }
      count++;
    }
  }
  if (!have)
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos),
                      "threaded bind ordinal %u is past the ordinal table (%u entries)", index, count);
  it->tcache[slot].valid = 1;
  it->tcache[slot].index = index;
  it->tcache[slot].symbol = found->symbol;
  it->tcache[slot].ordinal = found->ordinal;
  it->tcache[slot].addend = found->addend;
  it->tcache[slot].flags = found->flags;
  return 0;
}

/* One entry of a THREADED_APPLY chain (arm64e pointer layout, stride 8). */
static int chain_step(struct macho_fixup_iter *it, struct macho_fixup *out) {
  struct macho_opcode_state *op = &it->op;
  const struct macho_image *img = it->img;
  memset(out, 0, sizeof *out);
  int rc = locate(it, out, op->chain_off, PTR_SIZE);
  if (rc) return rc;
  int64_t fo = macho_vm_to_off(img, op->seg, out->vmaddr, PTR_SIZE);
  const uint8_t *q = fo < 0 ? NULL : macho_bytes(img, (uint64_t)fo, PTR_SIZE);
  if (!q)
    return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos),
                      "threaded chain entry at vmaddr 0x%llx is not in the file",
                      (unsigned long long)out->vmaddr);
  uint64_t raw = macho_rd64(q), next = 0;
  uint64_t vmaddr = out->vmaddr, file_off = out->file_off;
  macho_chained_decode(CHAINED_PTR_ARM64E, raw, img->base_vmaddr, out, &next);
  out->vmaddr = vmaddr;
  out->file_off = file_off;
  out->segment = op->seg;
  out->flags |= MACHO_FIXUP_THREADED;
  out->type = BIND_TYPE_POINTER;
  if (next == 0) op->in_chain = 0;
  else op->chain_off += next;
  if (out->kind == MACHO_FIXUP_BIND) {
    struct regs e = {0};
    if ((rc = table_entry(it, (uint32_t)out->ordinal, &e))) return rc;
    if (!e.symbol)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos), "threaded bind entry without symbol");
    out->symbol = e.symbol;
    out->ordinal = e.ordinal;
    out->addend += e.addend;
    if (e.flags & BIND_SYMBOL_FLAGS_WEAK_IMPORT) out->flags |= MACHO_FIXUP_WEAK_IMPORT;
  }
  return 1;
}

static int emit(struct macho_fixup_iter *it, struct macho_fixup *out) {
  struct macho_opcode_state *op = &it->op;
  memset(out, 0, sizeof *out);
  uint32_t len = (op->type == 2 || op->type == 3) ? 4 : PTR_SIZE;
  int rc = locate(it, out, op->seg_off, len);
  if (rc) return rc;
  out->kind = op->kind;
  out->type = op->type;
  if (op->kind != MACHO_FIXUP_REBASE) {
    if (!op->symbol)
      return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos), "bind before any symbol was set");
    out->symbol = op->symbol;
    out->ordinal = op->ordinal;
    out->addend = op->addend;
    if (op->sym_flags & BIND_SYMBOL_FLAGS_WEAK_IMPORT) out->flags |= MACHO_FIXUP_WEAK_IMPORT;
  }
  op->seg_off += op->skip;
  op->repeat--;
  return 1;
}

int macho_opcodes_next(struct macho_fixup_iter *it, struct macho_fixup *out) {
  struct macho_opcode_state *op = &it->op;
  const uint8_t *p = NULL;
  for (;;) {
    if (op->in_chain) return chain_step(it, out);
    if (op->repeat) return emit(it, out);
    if (op->done || op->pos >= op->end) return 0;
    if (!p) {
      p = macho_bytes(it->img, op->start, op->end - op->start);
      if (!p) return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->start), "opcodes unreadable");
      p -= op->start;
    }
    struct regs r;
    regs_from(&r, op);
    op->op_pos = op->pos;
    uint64_t table = op->table_size;
    int a = op->kind == MACHO_FIXUP_REBASE
                ? rebase_step(it, p, op->end, &op->pos, &r, &op->repeat, &op->skip)
                : bind_step(it, p, op->end, &op->pos, &r, &op->repeat, &op->skip, &table);
    if (a < 0) return a;
    regs_to(op, &r);
    if (table != op->table_size) {
      op->table_size = (uint32_t)table;
      op->table_count = 0;
      op->threaded = 1;
      for (int i = 0; i < 16; i++) it->tcache[i].valid = 0;
    }
    switch (a) {
    case A_END:
      op->done = 1;
      return 0;
    case A_STRONG:
      memset(out, 0, sizeof *out);
      out->kind = MACHO_FIXUP_WEAK_BIND;
      out->flags = MACHO_FIXUP_STRONG;
      out->segment = UINT32_MAX;
      out->symbol = r.symbol;
      return 1;
    case A_TABLE_ENTRY:
      if (++op->table_count > op->table_size)
        return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos),
                          "more threaded table entries than its declared size %u", op->table_size);
      break;
    case A_APPLY:
      if (!op->seg_set)
        return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos), "THREADED_APPLY before SET_SEGMENT");
      op->table_start = op->op_pos;
      op->in_chain = 1;
      op->chain_off = op->seg_off;
      for (int i = 0; i < 16; i++) it->tcache[i].valid = 0;
      break;
    case A_EMIT:
      if (op->kind == MACHO_FIXUP_REBASE && !op->type)
        return macho_fail(&it->err, HG_EFORMAT, efoff(it, op->op_pos), "rebase before SET_TYPE");
      break;
    default:
      break;
    }
  }
}
