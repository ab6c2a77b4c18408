/*
 * options_help.c - the option table (options_int.h) printed three ways:
 * --help within 80 columns, the man page's lists, docs/OPTIONS.md's
 * tables; each grouped under the same headings, in the same order.
 */
#include "tools/options_int.h"

#include <stdbool.h>
#include <string.h>

#define HELP_WIDTH 80		/* columns of --help, as a terminal's */
#define HELP_INDENT 29		/* where each option's help starts */

/* What -o takes, in --help and in the man page. */
static const char o_help[] =
	"mount options: any option here as name=value (cache_dir= or\n"
	"cache-dir=), or FUSE's (allow_other, ...); ro is implied";

static bool group_used(enum opt_group g, unsigned cmd)
{
	for (size_t i = 0; i < options_ndefs; i++)
		if (options_defs[i].group == g && (options_defs[i].cmds & cmd))
			return true;
	return false;
}

/* TEXT as one paragraph (its newlines are spaces), from column COL on,
 * wrapped at HELP_WIDTH with its next lines at HELP_INDENT; then a
 * newline. A word is never cut: the table has none longer than a line. */
static void usage_wrap(FILE *out, const char *text, size_t col)
{
	bool first = true;
	for (const char *p = text; *p;) {
		p += strspn(p, " \n");
		if (!*p)
			break;
		size_t len = strcspn(p, " \n");
		if (!first && col + 1 + len > HELP_WIDTH) {
			fprintf(out, "\n%*s", HELP_INDENT, "");
			col = HELP_INDENT;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, len, out);
		col += len;
		p += len;
		first = false;
	}
	fputc('\n', out);
}

/* HEAD ("-f, --foreground") and HELP; HELP on the next line when HEAD
 * reaches its column. */
static void usage_entry(FILE *out, const char *head, const char *help)
{
	int col = fprintf(out, "  %s", head);
	if (col + 1 > HELP_INDENT) {
		fputc('\n', out);
		col = 0;
	}
	fprintf(out, "%*s", HELP_INDENT - col, "");
	usage_wrap(out, help, HELP_INDENT);
}

void options_usage(FILE *out, unsigned cmd)
{
	usage_entry(out, "-h, --help", "show this help");
	for (int g = 0; g < GROUP_COUNT; g++) {
		if (!group_used(g, cmd))
			continue;
		fprintf(out, "\n%s:\n", options_group_names[g]);
		for (size_t i = 0; i < options_ndefs; i++) {
			const struct option_def *d = &options_defs[i];
			char head[64], help[2048];
			if (d->group != (enum opt_group)g || !(d->cmds & cmd))
				continue;
			char short_form[8] = "    ";
			if (d->short_name)
				snprintf(short_form, sizeof(short_form), "-%c, ", d->short_name);
			snprintf(head, sizeof(head), "%s--%s%s%s", short_form, d->name,
				 d->arg ? " " : "", d->arg ? d->arg : "");
			bool shows_default = d->def && d->type != OPT_FLAG && d->type != OPT_ALIAS;
			snprintf(help, sizeof(help), "%s%s%s%s", d->help, shows_default ? " [" : "",
				 shows_default ? d->def : "", shows_default ? "]" : "");
			usage_entry(out, head, help);
		}
		if (g == GROUP_MOUNT && cmd == OPTIONS_MOUNT)
			usage_entry(out, "-o OPT[,OPT...]", o_help);
	}
}

/* Text for roff: a backslash doubled, '-' as "\-" (a minus, so the
 * options can be searched and copied), a line never starting with '.' or
 * '\''; each newline of the table's help becomes a space. */
static void man_text(FILE *out, const char *text)
{
	bool line_start = true;
	for (const char *p = text; *p; p++) {
		if (line_start && (*p == '.' || *p == '\''))
			fputs("\\&", out);
		line_start = false;
		if (*p == '\\')
			fputs("\\e", out);
		else if (*p == '-')
			fputs("\\-", out);
		else if (*p == '\n')
			fputc(' ', out);
		else
			fputc(*p, out);
	}
}

static void man_entry(FILE *out, const struct option_def *d)
{
	fputs(".TP\n", out);
	if (d->short_name)
		fprintf(out, "\\fB\\-%c\\fR, ", d->short_name);
	fputs("\\fB\\-\\-", out);
	man_text(out, d->name);
	fputs("\\fR", out);
	if (d->arg) {
		fputs(" \\fI", out);
		man_text(out, d->arg);
		fputs("\\fR", out);
	}
	fputc('\n', out);
	man_text(out, d->help);
	if (d->def && d->type != OPT_FLAG && d->type != OPT_ALIAS) {
		fputs(" [default: ", out);
		man_text(out, d->def);
		fputc(']', out);
	}
	fputc('\n', out);
}

void options_man(FILE *out, unsigned cmd)
{
	fputs(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow this help\n", out);
	for (int g = 0; g < GROUP_COUNT; g++) {
		if (!group_used(g, cmd))
			continue;
		fputs(".SS ", out);
		man_text(out, options_group_names[g]);
		fputc('\n', out);
		for (size_t i = 0; i < options_ndefs; i++)
			if (options_defs[i].group == (enum opt_group)g &&
			    (options_defs[i].cmds & cmd))
				man_entry(out, &options_defs[i]);
		if (g == GROUP_MOUNT && cmd == OPTIONS_MOUNT) {
			fputs(".TP\n\\fB\\-o\\fR \\fIOPT\\fR[,\\fIOPT\\fR...]\n", out);
			man_text(out, o_help);
			fputc('\n', out);
		}
	}
}

/* Text for a Markdown table cell: each newline of the table's help becomes
 * a space, '|' is escaped. */
static void markdown_text(FILE *out, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			fputc(' ', out);
		else if (*p == '|')
			fputs("\\|", out);
		else
			fputc(*p, out);
	}
}

static void markdown_row(FILE *out, const struct option_def *d)
{
	fputs("| `", out);
	if (d->short_name)
		fprintf(out, "-%c`, `", d->short_name);
	fprintf(out, "--%s%s%s` | ", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
	if (d->type == OPT_FLAG || d->type == OPT_ALIAS)
		fputs("off", out);
	else if (d->def)
		fprintf(out, "`%s`", d->def);
	fputs(" | ", out);
	markdown_text(out, d->help);
	fputs(" |\n", out);
}

void options_markdown(FILE *out, unsigned cmd)
{
	bool first = true;
	for (int g = 0; g < GROUP_COUNT; g++) {
		if (!group_used(g, cmd))
			continue;
		fprintf(out, "%s### %s\n\n| option | default | meaning |\n|---|---|---|\n",
			first ? "" : "\n", options_group_names[g]);
		first = false;
		for (size_t i = 0; i < options_ndefs; i++)
			if (options_defs[i].group == (enum opt_group)g &&
			    (options_defs[i].cmds & cmd))
				markdown_row(out, &options_defs[i]);
		if (g == GROUP_MOUNT && cmd == OPTIONS_MOUNT) {
			fputs("| `-o OPT[,OPT...]` | | ", out);
			markdown_text(out, o_help);
			fputs(" |\n", out);
		}
	}
}
