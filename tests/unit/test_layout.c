/* test_layout.c - units of fixed-block objects, edges included. */
#include "cache/layout.h"
#include "check.h"

int main(void)
{
	struct layout l;
	layout_init_blocks(&l, 1000, 256);
	struct extent e = layout_unit_at(&l, 0);
	CHECK(e.off == 0 && e.len == 256, "first block");
	e = layout_unit_at(&l, 511);
	CHECK(e.off == 256 && e.len == 256, "inner block");
	e = layout_unit_at(&l, 999);
	CHECK(e.off == 768 && e.len == 232, "last block is short (%llu)", (unsigned long long)e.len);
	layout_init_blocks(&l, 256, 256);
	e = layout_unit_at(&l, 255);
	CHECK(e.off == 0 && e.len == 256, "object of exactly one block");
	return check_done();
}
