/*
 * inspect.h - `tilefs inspect PATH`: what tilefs knows of an object.
 */
#ifndef TILEFS_INSPECT_H
#define TILEFS_INSPECT_H

/* ARGV after "inspect". Returns the exit status. */
int inspect_main(int argc, char **argv);

#endif
