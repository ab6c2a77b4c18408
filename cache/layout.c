/*
 * layout.c - see layout.h.
 */
#include "layout.h"

void layout_init_blocks(struct layout *l, uint64_t object_size, uint64_t block_size)
{
	l->object_size = object_size;
	l->block_size = block_size;
}

struct extent layout_unit_at(const struct layout *l, uint64_t off)
{
	struct extent e;
	e.off = off - off % l->block_size;
	e.len = l->object_size - e.off < l->block_size ? l->object_size - e.off : l->block_size;
	return e;
}
