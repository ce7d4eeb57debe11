/*  vl_up: `volley up`, a whole run on one box. It starts a broker, a learner
    and N actor processes talking over loopback sockets, prints one progress
    line a second from the learner's reports, and stops them all on Ctrl-C,
    when the environment is solved, or when the step budget is spent. */
#ifndef VL_UP_H
#define VL_UP_H

/* The `volley up` command. Returns 0 when solved, 1 when the budget ran out
   or a process failed, 2 on bad flags, 130 when interrupted. */
int vl_up_main(int argc, char **argv);

#endif
