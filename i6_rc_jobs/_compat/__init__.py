"""Compatibility with the outside: returnn_common with today's RETURNN (``rc_compat``), the failure hints that name
its fix, RETURNN's identity of two copies of one function, and the module paths pickles of older releases name."""
