/*
 * tier_config.h - `tilefs tier-config`: print an nginx configuration for a
 * shared cache tier in front of one store (README, "Cluster"; the client
 * side is cache/origin/tier.h).
 */
#ifndef TILEFS_TIER_CONFIG_H
#define TILEFS_TIER_CONFIG_H

#include <stdio.h>

/* ARGV after "tier-config". Returns the exit status. */
int tier_config_main(int argc, char **argv);
/* The usage text (also for the man page). */
void tier_config_usage(FILE *out);

#endif
