/*  vl_keygen: `volley keygen DIR`, the certificates a secured run needs. */
#ifndef VL_KEYGEN_H
#define VL_KEYGEN_H

/* The `volley keygen` command. Returns 0, 1 on a failure to write, 2 on bad
   usage. */
int vl_keygen_main(int argc, char **argv);

#endif
