"""The broker's sans-I/O core: no trio, no sockets, no wall clock, no global randomness."""
