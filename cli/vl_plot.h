/*  vl_plot: `volley plot RUN [RUN...]`, learning curves from runs'
    metrics.jsonl drawn by matplotlib (bindings/python/volley/plot.py). */
#ifndef VL_PLOT_H
#define VL_PLOT_H

/* The `volley plot` command: runs `python3 -m volley.plot ARGS` with this
   checkout's bindings/python on PYTHONPATH. Returns its exit code (0 drawn,
   2 bad usage or a run without metrics), or 1 if Python cannot be run. */
int vl_plot_main(int argc, char **argv);

#endif
