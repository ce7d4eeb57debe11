/*  vl_plot: `volley plot RUN [RUN...]`, learning curves from runs'
    metrics.jsonl drawn by matplotlib (bindings/python/volley/plot.py); and
    how volley hands a command to its Python package. */
#ifndef VL_PLOT_H
#define VL_PLOT_H

/* The `volley plot` command: runs `python3 -m volley.plot ARGS`. Returns its
   exit code (0 drawn, 2 bad usage or a run without metrics), or 1 if Python
   cannot be run. */
int vl_plot_main(int argc, char **argv);

/* Replaces this process with `python3 -m MODULE argv[1..]`: $VOLLEY_PYTHON,
   else the first python3 on PATH that runs `-c probe` (NULL: the first),
   its environment carrying VOLLEY_LIB (the libvolley.so built or installed
   beside this program) and $VOLLEY_PYTHONPATH in front of PYTHONPATH. Returns 1 only
   after saying, as "volley CMD: ...", why Python could not be run (also
   when no python3 on PATH runs the probe). */
int vl_python_exec(const char *cmd, const char *module, const char *probe, int argc, char **argv);

#endif
