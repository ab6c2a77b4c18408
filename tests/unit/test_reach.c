/* test_reach.c - the origin's outage state (reach.h): what is an outage,
 * what ends one, and one probe at a time while it lasts. */
#include "cache/origin/reach.h"
#include "check.h"

#include <errno.h>

int main(void)
{
	struct reach r = { 0 };
	uint64_t down_for = 0;

	CHECK(reach_classify(0, -EAGAIN) < 0 && reach_classify(0, -EIO) < 0 &&
	      reach_classify(503, -EAGAIN) < 0 && reach_classify(429, -EAGAIN) < 0 &&
	      reach_classify(408, -EAGAIN) < 0,
	      "no connection, a timeout, 5xx, 429 and 408 are outages");
	CHECK(reach_classify(200, 0) > 0 && reach_classify(404, -ENOENT) > 0 &&
	      reach_classify(403, -EACCES) > 0 && reach_classify(412, -ESTALE) > 0 &&
	      reach_classify(301, -EIO) > 0, "2xx, 3xx, 403, 404 and 412 are answers");
	CHECK(reach_classify(0, -EPERM) == 0 && reach_classify(0, -ECANCELED) == 0 &&
	      reach_classify(0, -ENOSPC) == 0, "a TLS trust failure, a cancel, a full disk: neither");

	CHECK(!reach_down(&r) && !reach_probe_due(&r, 1000), "up at first: no probe");
	CHECK(reach_note(&r, -1, 1000, &down_for) && reach_down(&r), "an outage: down, told once");
	CHECK(!reach_note(&r, -1, 1500, &down_for) && reach_down(&r), "a second: not told again");
	CHECK(!reach_probe_due(&r, 1600), "no probe before REACH_PROBE_MS");
	CHECK(reach_probe_due(&r, 1500 + REACH_PROBE_MS) &&
	      !reach_probe_due(&r, 1500 + REACH_PROBE_MS),
	      "then one probe, for one caller");
	CHECK(!reach_note(&r, 0, 5000, &down_for) && reach_down(&r), "neither kind: still down");
	CHECK(reach_note(&r, 1, 5000, &down_for) && !reach_down(&r) && down_for == 4000,
	      "an answer: up, told once, after %llu ms down", (unsigned long long)down_for);
	CHECK(!reach_note(&r, 1, 6000, &down_for), "a second answer: nothing to tell");
	reach_count_stale(&r);
	CHECK(atomic_load(&r.stale_answers) == 1, "stale answers counted");
	return check_done();
}
