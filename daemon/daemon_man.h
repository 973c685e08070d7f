/* daemon_man.h: the inferd(8) man page, generated from the config table. */
#ifndef INFERD_DAEMON_MAN_H
#define INFERD_DAEMON_MAN_H

#include <stdio.h>

/* Print inferd.8 in man(7) roff. */
void daemon_print_man(FILE *f);

#endif
