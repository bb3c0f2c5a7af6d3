/*
 * Unit tests for slot.c: the table of a slot's moves is the diagram of
 * supervisor.h, no more, no less; a move or a stop's step it does not
 * have ends the supervisor (a bug of ours, never a leaked slot); each
 * allowed move keeps the generation's count of slots in use.
 */
#include "rowq.h"
#include "supervisor.h"

#include <check.h>
#include "unit.h"
#include <signal.h>
#include <string.h>

START_TEST(test_moves_are_the_diagram)
{
	static const struct { enum slot_state from, to; } allowed[] = {
		{ SLOT_FREE, SLOT_RUNNING },
		{ SLOT_FREE, SLOT_RESTARTING },
		{ SLOT_RUNNING, SLOT_RESTARTING },
		{ SLOT_RUNNING, SLOT_RETIRING },
		{ SLOT_RUNNING, SLOT_FREE },
		{ SLOT_RESTARTING, SLOT_RUNNING },
		{ SLOT_RESTARTING, SLOT_FREE },
		{ SLOT_RETIRING, SLOT_FREE },
	};
	int n = 0;

	for (int from = SLOT_FREE; from <= SLOT_RETIRING; from++)
		for (int to = SLOT_FREE; to <= SLOT_RETIRING; to++) {
			bool want = false;
			for (size_t i = 0; i < sizeof(allowed) /
			    sizeof(allowed[0]); i++)
				want |= allowed[i].from == (enum slot_state)from &&
				    allowed[i].to == (enum slot_state)to;
			ck_assert_msg(slot_move_allowed(from, to) == want,
			    "%s -> %s", slot_state_name(from),
			    slot_state_name(to));
			n += want;
		}
	ck_assert_int_eq(n, 8);
	ck_assert(!slot_move_allowed(SLOT_RETIRING, SLOT_RUNNING));
	ck_assert(!slot_move_allowed(SLOT_RETIRING, SLOT_RESTARTING));
	ck_assert(!slot_move_allowed(SLOT_FREE, SLOT_RETIRING));
	ck_assert(!slot_move_allowed(SLOT_RESTARTING, SLOT_RETIRING));
	ck_assert(!slot_move_allowed(SLOT_FREE, (enum slot_state)17));
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(slot_state_name(SLOT_FREE), "free");
	ck_assert_str_eq(slot_state_name(SLOT_RUNNING), "running");
	ck_assert_str_eq(slot_state_name(SLOT_RESTARTING), "restarting");
	ck_assert_str_eq(slot_state_name(SLOT_RETIRING), "retiring");
	ck_assert_str_eq(slot_stage_name(STAGE_FINISHING), "finishing");
	ck_assert_str_eq(slot_stage_name(STAGE_ABORTING), "aborting");
	ck_assert_str_eq(slot_stage_name(STAGE_KILLED), "killed");
	ck_assert_str_eq(slot_state_name((enum slot_state)9), "?");
}
END_TEST

START_TEST(test_stages_forward_one_step)
{
	ck_assert(slot_stage_allowed(STAGE_RUNNING, STAGE_FINISHING));
	ck_assert(slot_stage_allowed(STAGE_FINISHING, STAGE_ABORTING));
	ck_assert(slot_stage_allowed(STAGE_ABORTING, STAGE_KILLED));
	ck_assert(!slot_stage_allowed(STAGE_RUNNING, STAGE_ABORTING));
	ck_assert(!slot_stage_allowed(STAGE_RUNNING, STAGE_KILLED));
	ck_assert(!slot_stage_allowed(STAGE_KILLED, STAGE_RUNNING));
	ck_assert(!slot_stage_allowed(STAGE_FINISHING, STAGE_FINISHING));
	ck_assert(!slot_stage_allowed(STAGE_KILLED, (enum stage)4));
}
END_TEST

static struct queue test_queue = { .name = "email" };

/* A supervisor with one generation and slot, enough for slot_set_state. */
static void
fixture(struct supervisor *s, struct generation *g, struct slot *sl)
{
	memset(s, 0, sizeof(*s));
	memset(g, 0, sizeof(*g));
	memset(sl, 0, sizeof(*sl));
	g->number = 1;
	s->current = g;
	s->gens[s->ngens++] = g;
	sl->gen = g;
	sl->queue = &test_queue;
	sl->number = 3;
}

START_TEST(test_live_count)
{
	struct supervisor s;
	struct generation g;
	struct slot sl;

	fixture(&s, &g, &sl);
	slot_set_state(&s, &sl, SLOT_RUNNING);
	ck_assert_int_eq(g.live, 1);
	sl.pid = 4242;
	slot_set_state(&s, &sl, SLOT_RESTARTING);
	ck_assert_int_eq(sl.pid, 0);
	ck_assert_int_eq(g.live, 1);
	slot_set_state(&s, &sl, SLOT_RUNNING);
	slot_set_state(&s, &sl, SLOT_RETIRING);
	ck_assert_int_eq(g.live, 1);
	/* The current generation is never released, only counted. */
	slot_set_state(&s, &sl, SLOT_FREE);
	ck_assert_int_eq(g.live, 0);
	ck_assert(s.status_dirty);
}
END_TEST

/* A move the diagram lacks: fatal, exit status 1. */
START_TEST(test_forbidden_move_is_fatal)
{
	struct supervisor s;
	struct generation g;
	struct slot sl;

	fixture(&s, &g, &sl);
	slot_set_state(&s, &sl, SLOT_RUNNING);
	slot_set_state(&s, &sl, SLOT_RETIRING);
	slot_set_state(&s, &sl, SLOT_RUNNING);
}
END_TEST

START_TEST(test_skipped_stage_is_fatal)
{
	struct supervisor s;
	struct generation g;
	struct slot sl;

	fixture(&s, &g, &sl);
	slot_set_stage(&sl, STAGE_KILLED, 0);
}
END_TEST

START_TEST(test_stage_sets_deadline)
{
	struct supervisor s;
	struct generation g;
	struct slot sl;
	struct worker_stats st = { 0 };

	fixture(&s, &g, &sl);
	sl.stats = &st;
	/* No worker (pid 0): nothing is signalled, the stage still moves. */
	slot_set_stage(&sl, STAGE_FINISHING, 1234);
	ck_assert_int_eq(sl.stage, STAGE_FINISHING);
	ck_assert_int_eq(sl.stage_deadline_ms, 1234);
	slot_set_stage(&sl, STAGE_ABORTING, 5678);
	ck_assert_int_eq(sl.stage_deadline_ms, 5678);
	slot_set_stage(&sl, STAGE_KILLED, 0);
	ck_assert_int_eq(sl.stage, STAGE_KILLED);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("slot");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_moves_are_the_diagram);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_stages_forward_one_step);
	tcase_add_test(tc, test_live_count);
	tcase_add_exit_test(tc, test_forbidden_move_is_fatal, 1);
	tcase_add_exit_test(tc, test_skipped_stage_is_fatal, 1);
	tcase_add_test(tc, test_stage_sets_deadline);
	suite_add_tcase(s, tc);
	return unit_run(s);
}
