/*
 * warm.h - `tilefs warm`: fetch files (or the tiles a selection names) into
 * a cache dir without a mount, safely beside a mount using it.
 */
#ifndef TILEFS_WARM_H
#define TILEFS_WARM_H

/* ARGV after "warm". Returns the exit status. */
int warm_main(int argc, char **argv);

#endif
