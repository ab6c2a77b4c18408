/*
 * cache_admin.h - `tilefs cache stat|ls|verify|evict|clear`: look at and
 * manage a cache dir, whether or not a mount is using it.
 */
#ifndef TILEFS_CACHE_ADMIN_H
#define TILEFS_CACHE_ADMIN_H

/* ARGV after "cache". Returns the exit status. */
int cache_admin_main(int argc, char **argv);

#endif
