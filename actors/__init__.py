"""The runtime: trio tasks that own one job each and talk over memory channels."""
