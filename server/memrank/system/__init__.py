"""What memrank asks of the operating system: JSON logs on stderr, the listening ports, the process defaults
(one BLAS thread, the allocator's trim threshold). Below the API and the runtime; imports nothing above core."""
