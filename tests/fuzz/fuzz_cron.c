/*
 * fuzz_cron: libFuzzer target for cron_parse, and for the slots of what
 * it accepts.
 *
 * Each input is one cron expression (the bytes up to the first NUL).
 * Whatever it holds, cron_parse must accept it or refuse it with a
 * message, without a crash or a sanitizer report; an expression it
 * accepts must give slots that go up, in each of a few zones (the first
 * byte picks one), from instants around DST changes.  Built with clang's
 * -fsanitize=fuzzer,address,undefined by `make build/fuzz/fuzz_cron`;
 * `make torture` runs it for a bounded time on tests/fuzz/corpus_cron,
 * and `make check` replays that corpus (build/fuzz/replay_cron).
 */
#include "rowq.h"
#include "schedule.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const fuzz_zones[] = {
	"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe",
	"Pacific/Chatham", "Asia/Kolkata",
};

/* 2026-03-08 06:00Z (New York springs forward), 2026-10-25 00:59Z
 * (Paris falls back), 2028-02-28 12:00Z (before a leap day). */
static const int64_t fuzz_after[] = { 1772949600, 1792889940, 1835352000 };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_init("fuzz");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[CRON_TEXT_MAX * 4], err[256] = "";
	struct schedule s = { 0 };

	if (size >= sizeof(text))
		size = sizeof(text) - 1;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cron_parse(&s.cron, text, err, sizeof(err)) == -1) {
		if (err[0] == '\0')
			abort();	/* a refusal says why */
		return 0;
	}
	if (s.cron.minute == 0 || s.cron.hour == 0 || s.cron.mday == 0 ||
	    s.cron.month == 0 || s.cron.wday == 0)
		abort();	/* a field that matches nothing */
	s.timezone = (char *)fuzz_zones[size > 0 ? data[0] % (sizeof(fuzz_zones) /
	    sizeof(fuzz_zones[0])) : 0];
	for (size_t i = 0; i < sizeof(fuzz_after) / sizeof(fuzz_after[0]); i++) {
		int64_t t = fuzz_after[i];
		for (int k = 0; k < 3; k++) {
			int64_t next = schedule_next(&s, t);
			if (next < 0)
				break;
			if (next <= t)
				abort();	/* slots go up */
			t = next;
		}
	}
	return 0;
}
