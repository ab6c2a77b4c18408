/*
 * manpage.h - tilefs(1) in roff, printed by the hidden `tilefs --help-man`
 * (make man, make deb). Its option lists come from the table --help prints
 * (tools/options.c), so the two cannot disagree.
 */
#ifndef TILEFS_MANPAGE_H
#define TILEFS_MANPAGE_H

#include <stdio.h>

void manpage_print(FILE *out);
/* docs/OPTIONS.md, printed by the hidden `tilefs --help-markdown` (make
 * docs): the same table as a Markdown page, so the docs cannot drift. */
void manpage_print_markdown(FILE *out);

#endif
