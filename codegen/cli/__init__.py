"""The command line: the only place that touches files and exit codes.

`entry` is the console script (fresh builds answered from headers alone),
`app` the typer application, `outputs` the plan of files and their headers,
`building` the writes, `terminal` what is printed.

Importing this package imports nothing else: `entry` must stay cheap.
"""
