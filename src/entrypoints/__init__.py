"""The command line (`sophos`) and the HTTP server, thin over the use cases."""
