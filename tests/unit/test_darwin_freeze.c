/*
 * test_darwin_freeze.c — the Darwin freeze protocol on Linux, with fakes:
 * thread_set.c against a fake task whose kernel makes threads during the
 * passes (workqueue threads), lets threads die between list and suspend,
 * and never settles (timeout); zone_policy.c against fake zones (scalable,
 * nano v2 with its helper, a NULL zone_locked, old versions, no
 * enumerator), the stack-logging lock, and unwalked malloc regions turned
 * into root memory.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/darwin_portable/darwin_portable.h"
#include "hg_test.h"

/* ---- a fake task ---- */

#define FT_MAX 64

struct fake_task {
  uint32_t ids[FT_MAX];
  int alive[FT_MAX], suspended[FT_MAX];
  uint32_t n;
  uint32_t refs;            /* references handed out by list() minus released */
  uint32_t lists;           /* list() calls                                     */
  uint32_t spawn_on_list[8]; /* at list() call k (1-based): a new thread        */
  uint32_t die_on_suspend;  /* this id ends before it can be suspended          */
  int spawn_forever;        /* a new thread at every list()                     */
  uint64_t clock;
};

static uint32_t ft_spawn(struct fake_task *t) {
  uint32_t id = 100 + t->n;
  t->ids[t->n] = id;
  t->alive[t->n] = 1;
  t->n++;
  return id;
}

static int ft_index(struct fake_task *t, uint32_t id) {
  for (uint32_t i = 0; i < t->n; i++)
    if (t->ids[i] == id) return (int)i;
  return -1;
}

static int ft_list(void *ctx, uint32_t *ids, uint32_t max, uint32_t *count) {
  struct fake_task *t = ctx;
  t->lists++;
  for (int k = 0; k < 8; k++)
    if (t->spawn_on_list[k] == t->lists && t->n < FT_MAX) ft_spawn(t);
  if (t->spawn_forever && t->n < FT_MAX) ft_spawn(t);
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->n; i++) {
    if (!t->alive[i]) continue;
    if (n < max) {
      ids[n] = t->ids[i];
      t->refs++;
    }
    n++;
  }
  *count = n;
  return 0;
}

static int ft_suspend(void *ctx, uint32_t id) {
  struct fake_task *t = ctx;
  int i = ft_index(t, id);
  if (i < 0 || !t->alive[i]) return -1;
  if (id == t->die_on_suspend) {
    t->alive[i] = 0;
    return -1;
  }
  t->suspended[i]++;
  return 0;
}

static void ft_resume(void *ctx, uint32_t id) {
  struct fake_task *t = ctx;
  int i = ft_index(t, id);
  if (i >= 0) t->suspended[i]--;
}

static void ft_release(void *ctx, uint32_t id) {
  (void)id;
  ((struct fake_task *)ctx)->refs--;
}

static uint64_t ft_now(void *ctx) {
  return ((struct fake_task *)ctx)->clock += 1000;
}

static const struct hg_tset_ops FT_OPS = {ft_list, ft_suspend, ft_resume, ft_release, ft_now};

static uint32_t held_buf[FT_MAX], list_buf[FT_MAX];

static struct hg_tset new_set(uint32_t self, uint32_t max) {
  struct hg_tset s;
  memset(&s, 0, sizeof s);
  s.held = held_buf;
  s.max = max;
  s.scratch = list_buf;
  s.scratch_max = FT_MAX;
  s.self = self;
  return s;
}

static int all_but_self_suspended(struct fake_task *t, uint32_t self) {
  for (uint32_t i = 0; i < t->n; i++)
    if (t->alive[i] && t->ids[i] != self && t->suspended[i] != 1) return 0;
  return 1;
}

static void test_stable_set(void) {
  struct fake_task t;
  memset(&t, 0, sizeof t);
  uint32_t self = ft_spawn(&t);
  for (int i = 0; i < 5; i++) ft_spawn(&t);
  struct hg_tset s = new_set(self, FT_MAX);
  REQUIRE(_hg_tset_freeze(&s, &FT_OPS, &t, UINT64_MAX) == 0);
  CHECK_EQ_U(s.nheld, 5);
  CHECK_EQ_U(s.passes, 2); /* one that suspends, one that finds nobody new */
  CHECK(all_but_self_suspended(&t, self));
  CHECK_EQ_U(t.suspended[0], 0); /* never the capturing thread */
  CHECK_EQ_U(t.refs, 5);         /* only the held threads keep a reference */
  _hg_tset_thaw(&s, &FT_OPS, &t);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0);
}

/* The kernel makes workqueue threads while the first passes run: each is
 * caught by a later pass, and the loop ends only on a quiet pass. */
static void test_threads_born_during_freeze(void) {
  struct fake_task t;
  memset(&t, 0, sizeof t);
  uint32_t self = ft_spawn(&t);
  ft_spawn(&t);
  t.spawn_on_list[0] = 1;
  t.spawn_on_list[1] = 2;
  t.spawn_on_list[2] = 3;
  struct hg_tset s = new_set(self, FT_MAX);
  REQUIRE(_hg_tset_freeze(&s, &FT_OPS, &t, UINT64_MAX) == 0);
  CHECK_EQ_U(s.nheld, 4);
  CHECK_EQ_U(s.passes, 4);
  CHECK(all_but_self_suspended(&t, self));
  /* one born after the freeze (during the walk): the late pass finds it */
  t.spawn_on_list[3] = t.lists + 1;
  CHECK_EQ_U(_hg_tset_pass(&s, &FT_OPS, &t), 1);
  CHECK_EQ_U(s.nheld, 5);
  CHECK(all_but_self_suspended(&t, self));
  CHECK_EQ_U(_hg_tset_pass(&s, &FT_OPS, &t), 0);
  _hg_tset_thaw(&s, &FT_OPS, &t);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0);
}

static void test_thread_dies(void) {
  struct fake_task t;
  memset(&t, 0, sizeof t);
  uint32_t self = ft_spawn(&t);
  ft_spawn(&t);
  t.die_on_suspend = ft_spawn(&t);
  ft_spawn(&t);
  struct hg_tset s = new_set(self, FT_MAX);
  REQUIRE(_hg_tset_freeze(&s, &FT_OPS, &t, UINT64_MAX) == 0);
  CHECK_EQ_U(s.nheld, 2);
  CHECK_EQ_U(t.refs, 2);
  _hg_tset_thaw(&s, &FT_OPS, &t);
  CHECK_EQ_U(t.refs, 0);
}

static void test_never_settles(void) {
  struct fake_task t;
  memset(&t, 0, sizeof t);
  uint32_t self = ft_spawn(&t);
  t.spawn_forever = 1;
  struct hg_tset s = new_set(self, FT_MAX);
  CHECK(_hg_tset_freeze(&s, &FT_OPS, &t, 5000) == HG_ETIMEOUT);
  CHECK_EQ_U(s.nheld, 0);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0); /* all resumed */
}

static void test_too_many_threads(void) {
  struct fake_task t;
  memset(&t, 0, sizeof t);
  uint32_t self = ft_spawn(&t);
  for (int i = 0; i < 10; i++) ft_spawn(&t);
  struct hg_tset s = new_set(self, 4); /* room for 4 */
  CHECK(_hg_tset_freeze(&s, &FT_OPS, &t, UINT64_MAX) == HG_ELIMIT);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0);
  /* a list larger than the list buffer */
  struct hg_tset s2 = new_set(self, FT_MAX);
  s2.scratch_max = 3;
  CHECK(_hg_tset_freeze(&s2, &FT_OPS, &t, UINT64_MAX) == HG_ELIMIT);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0);
}

/* ---- fake zones ---- */

struct fake_zone {
  const char *name;
  uint32_t version;
  int enumerator, has_locked, locked;
};

struct fake_malloc {
  struct fake_zone z[8];
  uint32_t n;
  int msl, msl_asked;
  uint32_t locked_asked[8];
};

static int fz_locked(void *ctx, uint32_t i) {
  struct fake_malloc *m = ctx;
  m->locked_asked[i]++;
  CHECK(m->z[i].has_locked); /* never called through a NULL zone_locked */
  return m->z[i].locked;
}

static int fz_msl(void *ctx) {
  struct fake_malloc *m = ctx;
  m->msl_asked++;
  return m->msl;
}

static void plan_all(struct fake_malloc *m, uint8_t *plans) {
  int helper = 0;
  for (uint32_t i = 0; i < m->n; i++)
    if (m->z[i].name && !strcmp(m->z[i].name, "MallocHelperZone")) helper = 1;
  for (uint32_t i = 0; i < m->n; i++) {
    struct hg_zone_facts f = {m->z[i].name, m->z[i].version, m->z[i].enumerator,
                              m->z[i].has_locked, helper, 0, 0};
    plans[i] = (uint8_t)_hg_zone_plan(&f);
  }
}

static void test_zone_plans(void) {
  /* iOS with nano: DefaultMallocZone (nano v2) + MallocHelperZone (scalable) */
  struct fake_malloc m = {{{"DefaultMallocZone", 16, 1, 1, 0},
                           {"MallocHelperZone", 16, 1, 1, 0},
                           {"QuartzCore", 13, 1, 1, 0},
                           {"xzone-like", 16, 1, 0, 0},   /* zone_locked NULL */
                           {"old", 4, 1, 1, 0},           /* before version 5 */
                           {NULL, 16, 0, 1, 0}},          /* no enumerator    */
                          6, 0, 0, {0}};
  uint8_t plans[8];
  plan_all(&m, plans);
  CHECK_EQ_U(plans[0], HG_ZONE_NANO);
  CHECK_EQ_U(plans[1], HG_ZONE_WALK);
  CHECK_EQ_U(plans[2], HG_ZONE_WALK);
  CHECK_EQ_U(plans[3], HG_ZONE_NO_LOCK_QUERY);
  CHECK_EQ_U(plans[4], HG_ZONE_NO_LOCK_QUERY);
  CHECK_EQ_U(plans[5], HG_ZONE_NO_ENUMERATOR);
  /* without a helper zone the default zone is the scalable zone: walked */
  struct hg_zone_facts f = {"DefaultMallocZone", 16, 1, 1, 0, 0, 0};
  CHECK_EQ_U(_hg_zone_plan(&f), HG_ZONE_WALK);
  /* a NULL zone_locked is refused loudly: the heap name says why */
  char buf[160];
  CHECK(!strcmp(_hg_zone_heap_name("xzone-like", HG_ZONE_NO_LOCK_QUERY, 0, buf, sizeof buf),
                "xzone-like (not walked: no zone_locked: its locks cannot be checked)"));
  CHECK(!strcmp(_hg_zone_heap_name("DefaultMallocZone", HG_ZONE_NANO, 0, buf, sizeof buf),
                "DefaultMallocZone (not walked: nano v2: its enumerator allocates, its layout was not recognised)"));
  CHECK(!strcmp(_hg_zone_heap_name("QuartzCore", HG_ZONE_WALK, 0, buf, sizeof buf), "QuartzCore"));
  CHECK(_hg_zone_plan_reason(HG_ZONE_WALK) == NULL);
  char small[12];
  _hg_zone_heap_name("a-long-zone-name", HG_ZONE_NANO, 0, small, sizeof small);
  CHECK_EQ_U(strlen(small), sizeof small - 1); /* truncated, terminated */

  /* busy: only walked zones are asked, never through NULL */
  CHECK_EQ_U(_hg_zones_busy(plans, m.n, fz_locked, fz_msl, &m), 0);
  CHECK_EQ_U(m.locked_asked[0], 0); /* nano: not walked, its answer is always "no" */
  CHECK_EQ_U(m.locked_asked[1], 1);
  CHECK_EQ_U(m.locked_asked[2], 1);
  CHECK_EQ_U(m.locked_asked[3], 0);
  CHECK_EQ_U(m.msl_asked, 1);
  m.z[1].locked = 1; /* the helper zone's magazine lock is held */
  CHECK_EQ_U(_hg_zones_busy(plans, m.n, fz_locked, fz_msl, &m), 1);
  m.z[1].locked = 0;
  m.z[3].locked = 1; /* not walked: its lock does not matter */
  CHECK_EQ_U(_hg_zones_busy(plans, m.n, fz_locked, fz_msl, &m), 0);
  m.msl = 1;         /* stack logging's lock is held */
  CHECK_EQ_U(_hg_zones_busy(plans, m.n, fz_locked, fz_msl, &m), 1);
  CHECK_EQ_U(_hg_zones_busy(plans, m.n, fz_locked, NULL, &m), 0); /* no MSL library */
}

static void test_unwalked_regions(void) {
  struct hg_cap *c = calloc(1, sizeof *c);
  REQUIRE(c);
  _hg_scratch_init(&c->scratch, 1ull << 26);
  REQUIRE(_hg_vec_init(&c->scratch, &c->regions, sizeof(struct hg_cregion), 64) == 0);
  REQUIRE(_hg_vec_init(&c->scratch, &c->segments, sizeof(struct hg_segment), 64) == 0);
  uint64_t spans[][2] = {{0x100000, 0x200000}, {0x200000, 0x300000}, {0x400000, 0x500000},
                         {0x600000, 0x700000}};
  uint32_t kinds[] = {HG_RK_HEAP, HG_RK_HEAP, HG_RK_STACK, HG_RK_HEAP};
  for (int i = 0; i < 4; i++) {
    struct hg_cregion *r = _hg_vec_push(&c->regions, 1);
    r->start = spans[i][0];
    r->end = spans[i][1];
    r->kind = kinds[i];
    r->prot = HG_PROT_READ | HG_PROT_WRITE;
  }
  struct hg_segment *s = _hg_vec_push(&c->segments, 1); /* walked zone in region 1 */
  s->base = 0x100000;
  s->end = 0x200000;
  /* a walked zone claims region 3 (empty of live blocks), given unsorted */
  struct hg_zrange claimed[] = {{0x680000, 0x690000}, {0x100000, 0x200000}};
  CHECK_EQ_U(_hg_zone_demote_unwalked(c, claimed, 2), 1);
  const struct hg_cregion *r = (const struct hg_cregion *)c->regions.base;
  CHECK_EQ_U(r[0].kind, HG_RK_HEAP);
  CHECK_EQ_U(r[1].kind, HG_RK_OTHER); /* e.g. the nano region: now root memory */
  CHECK(r[1].flags & HG_RF_ANON);
  CHECK_EQ_U(r[2].kind, HG_RK_STACK);
  CHECK_EQ_U(r[3].kind, HG_RK_HEAP);  /* free memory of a walked zone: no roots */
  CHECK(!(r[3].flags & HG_RF_ANON));
  /* claims unknown (table overflow): every unclaimed-looking one is scanned */
  CHECK_EQ_U(_hg_zone_demote_unwalked(c, NULL, 0), 1);
  CHECK_EQ_U(r[3].kind, HG_RK_OTHER);
  _hg_scratch_free(&c->scratch);
  free(c);
}

/* ---- xzone (item 1 of issue 27) ----
 * A fake xzone as libmalloc-792.41.1 builds it: malloc_zone_t.version 16
 * (src/xzone_malloc/xzone_malloc.c, the zone template ".version = 16"),
 * introspect.zone_type = MALLOC_ZONE_TYPE_XZONE = 1 (src/malloc_common.h
 * malloc_zone_type_t; xzone_introspect.c xzm_malloc_zone_introspect),
 * introspect.zone_locked = xzm_locked, which is
 * xzm_abort("xzm_locked not implemented") -> __builtin_trap()
 * (xzone_malloc.c xzm_locked; xzone_inline_internal.h xzm_abort): here it
 * abort()s the process. The busy test runs in a child so that the trap is
 * seen as a failure, not as the end of the test program. */
static int xz_locked(void *ctx, uint32_t i) {
  const uint8_t *plans = ctx;
  if (plans[i] == 0xff) abort(); /* never reached: see below */
  if (i == 1) abort();            /* zone 1 is the xzone: xzm_locked traps */
  return 0;
}

static int busy_in_child(const uint8_t *plans, uint32_t n) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGABRT, SIG_DFL);
    _exit(_hg_zones_busy(plans, n, xz_locked, NULL, (void *)plans) == 0 ? 0 : 3);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_xzone_never_asked(void) {
  /* iOS 18.4+ / macOS 26: one xzone as DefaultMallocZone; iOS 18.0-18.3
   * style: nano v2 default, xzone helper. Both with a scalable zone made by
   * malloc_create_zone on an older system. */
  struct hg_zone_facts xz_default = {"DefaultMallocZone", 16, 1, 1, 0, HG_MALLOC_ZONE_TYPE_XZONE, 0};
  struct hg_zone_facts xz_helper = {"MallocHelperZone", 16, 1, 1, 1, HG_MALLOC_ZONE_TYPE_XZONE, 0};
  struct hg_zone_facts nano = {"DefaultMallocZone", 16, 1, 1, 1, 0, 1};
  struct hg_zone_facts nano_unknown = {"DefaultMallocZone", 16, 1, 1, 1, 0, 0};
  struct hg_zone_facts scal = {"app zone", 13, 1, 1, 0, 0, 0};
  struct hg_zone_facts xz_v13 = {"v13", 13, 1, 1, 0, HG_MALLOC_ZONE_TYPE_XZONE, 0};
  CHECK_EQ_U(_hg_zone_plan(&xz_default), HG_ZONE_XZONE);
  CHECK_EQ_U(_hg_zone_plan(&xz_helper), HG_ZONE_XZONE);
  CHECK_EQ_U(_hg_zone_plan(&nano), HG_ZONE_NANO_OWN);
  CHECK_EQ_U(_hg_zone_plan(&nano_unknown), HG_ZONE_NANO);
  CHECK_EQ_U(_hg_zone_plan(&scal), HG_ZONE_WALK);
  /* zone_type exists from version 14 on: a version-13 zone's "zone_type"
   * is not read as one (the SDK struct ends before it) */
  CHECK_EQ_U(_hg_zone_plan(&xz_v13), HG_ZONE_WALK);
  CHECK(_hg_zone_plan_walks(HG_ZONE_XZONE) && _hg_zone_plan_walks(HG_ZONE_NANO_OWN));
  CHECK(!_hg_zone_plan_walks(HG_ZONE_NANO) && !_hg_zone_plan_walks(HG_ZONE_NO_LOCK_QUERY));
  char buf[160];
  CHECK(!strcmp(_hg_zone_heap_name("DefaultMallocZone", HG_ZONE_XZONE, 0, buf, sizeof buf),
                "DefaultMallocZone"));
  /* the busy test with the zones of a nano-on-xzone process: zone 1's
   * zone_locked traps; the capture must never call it */
  const struct hg_zone_facts *zs[] = {&nano, &xz_helper, &scal};
  uint8_t plans[3];
  for (int i = 0; i < 3; i++) plans[i] = (uint8_t)_hg_zone_plan(zs[i]);
  CHECK_EQ_U(busy_in_child(plans, 3), 0); /* 128 + SIGABRT when xzm_locked is called */
}

/* ---- the walk redone when the kernel makes a thread (item 5) ---- */

struct fake_walk {
  struct fake_task *t;
  struct hg_tset *s;
  uint32_t walked[8];
  uint32_t spawn_in_zone;   /* during this zone's walk, on attempts below: */
  uint32_t spawn_attempts;  /* the kernel makes a workqueue thread         */
  uint32_t attempt, resets, refreezes;
  uint32_t blocks;          /* gathered by the current attempt             */
};

static int fw_walk(void *ctx, uint32_t i) {
  struct fake_walk *w = ctx;
  w->walked[i]++;
  w->blocks += 10;
  if (i == w->spawn_in_zone && w->attempt < w->spawn_attempts) ft_spawn(w->t);
  return 0;
}

static int fw_changed(void *ctx) {
  struct fake_walk *w = ctx;
  return _hg_tset_changed(w->s, &FT_OPS, w->t);
}

static void fw_reset(void *ctx) {
  struct fake_walk *w = ctx;
  w->resets++;
  w->blocks = 0;
}

static int fw_refreeze(void *ctx) {
  struct fake_walk *w = ctx;
  w->refreezes++;
  w->attempt++;
  _hg_tset_thaw(w->s, &FT_OPS, w->t);
  return _hg_tset_freeze(w->s, &FT_OPS, w->t, UINT64_MAX);
}

static const struct hg_zwalk_ops FW_OPS = {fw_walk, fw_changed, fw_reset, fw_refreeze};

/* A fake task of the capturing thread and `others` threads, frozen. */
static void frozen_task(struct fake_task *t, struct hg_tset *s, int others) {
  memset(t, 0, sizeof *t);
  uint32_t self = ft_spawn(t);
  for (int i = 0; i < others; i++) ft_spawn(t);
  *s = new_set(self, FT_MAX);
  REQUIRE(_hg_tset_freeze(s, &FT_OPS, t, UINT64_MAX) == 0);
}

static void test_walk_redone_on_new_thread(void) {
  uint8_t plans[4] = {HG_ZONE_NANO_OWN, HG_ZONE_XZONE, HG_ZONE_NO_LOCK_QUERY, HG_ZONE_WALK};
  /* a workqueue thread appears while zone 1 is read, once */
  struct fake_task t;
  struct hg_tset s;
  frozen_task(&t, &s, 3);
  struct fake_walk w = {&t, &s, {0}, 1, 1, 0, 0, 0, 0};
  CHECK_EQ_U(_hg_zones_walk_stable(plans, 4, &FW_OPS, &w, HG_ZWALK_TRIES), 0);
  CHECK_EQ_U(w.refreezes, 1);
  CHECK_EQ_U(w.resets, 1);
  CHECK_EQ_U(w.walked[0], 2); /* zone 0 walked in both attempts      */
  CHECK_EQ_U(w.walked[1], 2);
  CHECK_EQ_U(w.walked[2], 0); /* not walked                          */
  CHECK_EQ_U(w.walked[3], 1); /* the first attempt stopped at zone 1 */
  CHECK_EQ_U(w.blocks, 30);   /* only the second attempt's blocks     */
  CHECK_EQ_U(s.nheld, 4);     /* the new thread is held now           */
  _hg_tset_thaw(&s, &FT_OPS, &t);
  CHECK_EQ_U(t.refs, 0);
  for (uint32_t i = 0; i < t.n; i++) CHECK_EQ_U(t.suspended[i], 0);

  /* the kernel keeps making threads: HG_EBUSY after HG_ZWALK_TRIES walks */
  struct fake_task t2;
  struct hg_tset s2;
  frozen_task(&t2, &s2, 1);
  struct fake_walk w2 = {&t2, &s2, {0}, 0, 1000, 0, 0, 0, 0};
  CHECK(_hg_zones_walk_stable(plans, 4, &FW_OPS, &w2, HG_ZWALK_TRIES) == HG_EBUSY);
  CHECK_EQ_U(w2.walked[0], HG_ZWALK_TRIES);
  CHECK_EQ_U(w2.refreezes, HG_ZWALK_TRIES - 1);
  CHECK_EQ_U(w2.blocks, 0); /* nothing torn is kept */
  _hg_tset_thaw(&s2, &FT_OPS, &t2);
  CHECK_EQ_U(t2.refs, 0);

  /* a stable task: one attempt, the set listed once per walked zone */
  struct fake_task t3;
  struct hg_tset s3;
  frozen_task(&t3, &s3, 1);
  uint32_t lists = t3.lists;
  struct fake_walk w3 = {&t3, &s3, {0}, 99, 0, 0, 0, 0, 0};
  CHECK_EQ_U(_hg_zones_walk_stable(plans, 4, &FW_OPS, &w3, HG_ZWALK_TRIES), 0);
  CHECK_EQ_U(w3.refreezes, 0);
  CHECK_EQ_U(t3.lists - lists, 3);
  _hg_tset_thaw(&s3, &FT_OPS, &t3);
  CHECK_EQ_U(t3.refs, 0);
}

int main(void) {
  RUN(test_stable_set);
  RUN(test_threads_born_during_freeze);
  RUN(test_thread_dies);
  RUN(test_never_settles);
  RUN(test_too_many_threads);
  RUN(test_zone_plans);
  RUN(test_unwalked_regions);
  RUN(test_xzone_never_asked);
  RUN(test_walk_redone_on_new_thread);
  return hg_test_done();
}
