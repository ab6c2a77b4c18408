/*
 * manpage.c - see manpage.h. The prose of tilefs(1) and of docs/OPTIONS.md;
 * the lists of options are options_man()'s and options_markdown()'s, from
 * the same table as --help, and ENVIRONMENT is credentials_table_man()'s,
 * from the table of docs/CONFIGURATION.md's credentials.
 */
#include "tools/manpage.h"
#include "tools/credentials_table.h"
#include "tools/options.h"

static const char head[] =
	".TH TILEFS 1 \"\" \"tilefs " TILEFS_VERSION "\" \"User Commands\"\n"
	".SH NAME\n"
	"tilefs \\- mount a cloud prefix of GeoTIFF/COG files read-only, with a persistent tile cache\n"
	".SH SYNOPSIS\n"
	".B tilefs mount\n"
	"[\\fIOPTIONS\\fR] \\fISOURCE\\fR \\fIMOUNTPOINT\\fR\n"
	".br\n"
	".B tilefs warm\n"
	"[\\fIOPTIONS\\fR] \\fISOURCE\\fR|\\fIMOUNTPOINT\\fR [\\fIPATH_OR_GLOB\\fR...]\n"
	".br\n"
	".B tilefs hint\n"
	"[\\fB\\-\\-client\\fR \\fINAME\\fR] \\fIMOUNTPOINT\\fR "
	"\\fIORDER_FILE\\fR|\\fB\\-\\fR|\\fB\\-\\-clear\\fR|\\fB\\-\\-clear\\-all\\fR\n"
	".br\n"
	".B tilefs inspect\n"
	"[\\fB\\-\\-blocks\\fR] [\\fB\\-\\-cache\\-dir\\fR \\fIDIR\\fR] \\fIPATH_OR_URL\\fR\n"
	".br\n"
	".B tilefs cache\n"
	"\\fBstat\\fR|\\fBls\\fR|\\fBverify\\fR|\\fBevict\\fR|\\fBclear\\fR "
	"[\\fIMOUNTPOINT\\fR|\\fB\\-\\-cache\\-dir\\fR \\fIDIR\\fR] [\\fB\\-\\-json\\fR] [\\fIARGS\\fR]\n"
	".br\n"
	".B tilefs tier\\-config\n"
	"[\\fIOPTIONS\\fR] \\fISOURCE\\fR\n"
	".br\n"
	".B mount \\-t tilefs\n"
	"\\fISOURCE\\fR \\fIMOUNTPOINT\\fR [\\fB\\-o\\fR \\fIname\\fR=\\fIvalue\\fR,...]\n"
	".SH DESCRIPTION\n"
	"tilefs mounts a cloud prefix of GeoTIFF/COG files read\\-only, so that unmodified\n"
	"rasterio, GDAL and PyTorch code reads them as local files. Everything read is\n"
	"cached on local disk, in whole TIFF tiles, in an SQLite\\-indexed cache that\n"
	"survives unmounts and reboots and that every tilefs process on the machine\n"
	"shares.\n"
	".PP\n"
	"\\fISOURCE\\fR is an \\fBhttp://\\fR or \\fBhttps://\\fR URL of a directory with\n"
	"index pages (nginx autoindex, Apache), \\fBs3://\\fIBUCKET\\fB/\\fIPREFIX\\fR,\n"
	"\\fBaz://\\fIACCOUNT\\fB/\\fICONTAINER\\fB/\\fIPREFIX\\fR or\n"
	"\\fBgs://\\fIBUCKET\\fB/\\fIPREFIX\\fR.\n"
	".SH COMMANDS\n"
	".TP\n"
	".B mount\n"
	"Mount \\fISOURCE\\fR at \\fIMOUNTPOINT\\fR. Returns once the mount is ready\n"
	"(exit 0) or says what to fix (exit 1; 2 for a bad command line). The daemon\n"
	"logs to \\fB\\-\\-log\\-file\\fR, by default \\fICACHE_DIR\\fB/tilefs.log\\fR.\n"
	"Unmount with \\fBfusermount3 \\-u\\fR \\fIMOUNTPOINT\\fR (or \\fBumount\\fR as root).\n"
	"With \\fB\\-f\\fR it stays in the foreground; SIGTERM, SIGINT or SIGHUP then\n"
	"unmounts it and it exits 0, as after an unmount (non\\-zero only for a real\n"
	"error).\n"
	".TP\n"
	".B warm\n"
	"Fetch files (or their headers, overviews, a window) into the cache dir\n"
	"without a mount, so that a mount of the same \\fISOURCE\\fR reads them without\n"
	"a request. Exit 0: everything warmed; 1: a file failed or the selection does\n"
	"not fit; 2: usage; 130: interrupted.\n"
	".TP\n"
	".B hint\n"
	"Hand a running mount the reads to come, one per line in order: a path\n"
	"relative to the mount, optionally a pixel window \\fIX Y W H\\fR of its\n"
	"full\\-resolution image. The mount fetches them ahead of its readers, at most\n"
	"\\fB\\-\\-hint\\-budget\\fR bytes ahead (\\fBtilefs hint \\-\\-help\\fR has the\n"
	"format). A hint is its client's (\\fB\\-\\-client\\fR \\fINAME\\fR, default\n"
	"\\fBcli\\fR): the mount serves every client's at once (a process per GPU),\n"
	"and a new hint replaces only its own client's. Only the mount's owner or\n"
	"root may hint. Exit 0: handed over; 1: refused (the message names the line\n"
	"at fault); 2: usage.\n"
	".TP\n"
	".B inspect\n"
	"Show a file's TIFF tile map and how much of it is cached.\n"
	".TP\n"
	".B cache\n"
	"Look at and manage a cache dir: \\fBstat\\fR, \\fBls\\fR, \\fBverify\\fR,\n"
	"\\fBevict\\fR \\fIPATTERN\\fR, \\fBclear\\fR.\n"
	".TP\n"
	".B tier\\-config\n"
	"Print an nginx configuration for a cache tier that many machines share in\n"
	"front of the store \\fISOURCE\\fR reads from (\\fB\\-\\-listen\\fR,\n"
	"\\fB\\-\\-cache\\-dir\\fR, \\fB\\-\\-cache\\-size\\fR, \\fB\\-\\-inactive\\fR,\n"
	"\\fB\\-\\-secret\\fR, ...: \\fBtilefs tier\\-config \\-\\-help\\fR). Mounts and\n"
	"warms given \\fB\\-\\-tier\\fR \\fIURL\\fR send it their requests, signed for\n"
	"the store; each range then comes from the store once for all of them.\n";

static const char tail[] =
	".SH MOUNT HELPER AND FSTAB\n"
	"\\fBmount.tilefs\\fR(8) lets \\fBmount\\fR(8), \\fI/etc/fstab\\fR and systemd\n"
	"mount tilefs. Every mount option above is given as \\fIname\\fB=\\fIvalue\\fR\n"
	"(\\fBcache_dir\\fR or \\fBcache\\-dir\\fR), a flag by its name:\n"
	".PP\n"
	".nf\n"
	".RS\n"
	"mount \\-t tilefs https://data.example.org/eo/ /mnt/eo \\-o cache_dir=/nvme/tilefs,cache_size=200G\n"
	".RE\n"
	".fi\n"
	".PP\n"
	"An \\fI/etc/fstab\\fR line; \\fBx\\-systemd.automount\\fR mounts it at first\n"
	"access instead of at boot:\n"
	".PP\n"
	".nf\n"
	".RS\n"
	"https://data.example.org/eo/ /mnt/eo tilefs cache_dir=/nvme/tilefs,cache_size=200G,_netdev,allow_other 0 0\n"
	".RE\n"
	".fi\n"
	".SH SYSTEMD\n"
	"\\fBtilefs\\-warm@\\fINAME\\fB.service\\fR runs \\fBtilefs warm\\fR once with the\n"
	"\\fBSOURCE\\fR, \\fBWARM_OPTIONS\\fR and \\fBWARM_PATHS\\fR set in\n"
	"\\fI/etc/tilefs/NAME.conf\\fR (an environment file, which also holds the\n"
	"credentials variables below); order a training job after it.\n"
	"\\fI/etc/tilefs/example.conf\\fR is a commented example.\n"
	".PP\n"
	"A mount as a service of its own runs \\fBtilefs mount \\-f\\fR with\n"
	"\\fBType=exec\\fR (or \\fBsimple\\fR): \\fBsystemctl stop\\fR sends SIGTERM, and\n"
	"the mount unmounts and exits 0. Without \\fB\\-f\\fR, \\fBtilefs mount\\fR\n"
	"forks the daemon and returns once the mount is ready: \\fBType=forking\\fR.\n"
	".SH NON-ROOT USE\n"
	"Any user may mount on a directory they own; the cache then defaults to\n"
	"\\fI$XDG_CACHE_HOME/tilefs\\fR. \\fB\\-\\-allow\\-other\\fR (\\fB\\-o allow_other\\fR:\n"
	"other users may read the mount) needs a line \\fBuser_allow_other\\fR in\n"
	"\\fI/etc/fuse.conf\\fR.\n";

/* After ENVIRONMENT, which is credentials_table_man()'s. */
static const char files[] =
	".SH FILES\n"
	".TP\n"
	".I /var/cache/tilefs\n"
	"the default cache dir of root (\\fIindex.db\\fR, \\fIdata\\-*\\fR,\n"
	"\\fItilefs.log\\fR, \\fImounts/PID.prom\\fR)\n"
	".TP\n"
	".I $XDG_CACHE_HOME/tilefs\n"
	"the default cache dir of other users (\\fI~/.cache/tilefs\\fR)\n"
	".TP\n"
	".I /etc/tilefs/NAME.conf\n"
	"what \\fBtilefs\\-warm@NAME.service\\fR warms\n"
	".SH SEE ALSO\n"
	"\\fBmount.tilefs\\fR(8), \\fBfstab\\fR(5), \\fBfusermount3\\fR(1),\n"
	"\\fBsystemd.mount\\fR(5), \\fBfuse\\fR(8)\n";

void manpage_print(FILE *out)
{
	fputs(head, out);
	fputs(".SH MOUNT OPTIONS\n"
	      "Options of \\fBtilefs mount\\fR, as \\fB\\-\\-\\fIname\\fR \\fIVALUE\\fR, "
	      "\\fB\\-\\-\\fIname\\fB=\\fIVALUE\\fR or \\fB\\-o\\fR \\fIname\\fB=\\fIVALUE\\fR:\n",
	      out);
	options_man(out, OPTIONS_MOUNT);
	fputs(".SH WARM OPTIONS\n"
	      "Options of \\fBtilefs warm\\fR:\n", out);
	options_man(out, OPTIONS_WARM);
	fputs(tail, out);
	credentials_table_man(out);
	fputs(files, out);
}

void manpage_print_markdown(FILE *out)
{
	fputs("# tilefs options\n"
	      "\n"
	      "<!-- Generated by `make docs` (`tilefs --help-markdown`) from the option\n"
	      "     table in tools/options.c: edit that table, not this file. -->\n"
	      "\n"
	      "The same table gives `tilefs mount --help`, `tilefs warm --help` and\n"
	      "`man tilefs`. Sizes take a suffix (`500M`, `2G`) or plain bytes.\n"
	      "Sources and credentials: [CONFIGURATION.md](CONFIGURATION.md).\n"
	      "\n"
	      "## tilefs mount [OPTIONS] SOURCE MOUNTPOINT\n"
	      "\n"
	      "Every option is also accepted as `-o name=value` (`cache_dir=` or\n"
	      "`cache-dir=`), a flag by its name; that is how `mount -t tilefs` and\n"
	      "fstab pass them. `--allow-other` and `--debug` are the exceptions:\n"
	      "as `-o` words, `allow_other` and `debug` are FUSE's.\n"
	      "\n", out);
	options_markdown(out, OPTIONS_MOUNT);
	fputs("\n"
	      "## tilefs warm [OPTIONS] SOURCE [PATH_OR_GLOB...]\n"
	      "\n", out);
	options_markdown(out, OPTIONS_WARM);
	fputs("\n"
	      "`tilefs tier-config --help` lists the options of `tilefs tier-config`,\n"
	      "`tilefs inspect --help` those of `tilefs inspect`, `tilefs hint --help`\n"
	      "the order format of `tilefs hint`.\n", out);
}
