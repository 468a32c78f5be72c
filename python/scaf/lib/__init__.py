"""What the commands are built on: paths, the wire format, the policy binding, daemons, tracing, plots, the bench and the simulator."""
