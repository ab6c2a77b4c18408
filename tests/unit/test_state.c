/* test_state.c - the cache's state (state.c): the prefetch policies by the
 * names --prefetch takes, and names that are none of them. */
#include "cache/engine/cache.h"
#include "check.h"

#include <errno.h>

int main(void)
{
	static const struct {
		const char *name;
		enum prefetch_policy policy;
	} names[] = {
		{ "none", PREFETCH_NONE },     { "neighbors", PREFETCH_NEIGHBORS },
		{ "row", PREFETCH_ROW },       { "object", PREFETCH_OBJECT },
		{ "auto", PREFETCH_AUTO },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		enum prefetch_policy p = PREFETCH_AUTO + 1;
		CHECK(cache_prefetch_parse(names[i].name, &p) == 0 && p == names[i].policy,
		      "\"%s\" names its policy", names[i].name);
	}
	enum prefetch_policy p = PREFETCH_ROW;
	CHECK(cache_prefetch_parse("neighbours", &p) == -EINVAL && p == PREFETCH_ROW,
	      "an unknown name is -EINVAL and sets nothing");
	CHECK(cache_prefetch_parse("", &p) == -EINVAL, "nor does an empty one");
	CHECK(cache_prefetch_parse("Row", &p) == -EINVAL, "names are lowercase");
	return check_done();
}
