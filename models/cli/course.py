"""`microtensor course`: the course as a static site that runs in a browser tab with nothing
installed (Pyodide; docs/course.md, issue 34): build it, fetch an offline Pyodide, preview it.

    microtensor course --output DIR [--pyodide URL|DIR]
    microtensor course --fetch-pyodide DIR
    microtensor course --serve DIR [--port N]
"""


def port_number(text):
    import argparse

    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535 (0: any free one); "
                                         f"got {text!r}")
    return port


def add_parser(subparsers):
    p = subparsers.add_parser(
        "course", help="build the course as a web page that runs in a browser (Pyodide)",
        description="Build chapter 3 of the course as a static folder: the README's example and "
                    "sections 3.1-3.8 as editable cells, their graphs and attention maps, a "
                    "tiny GPT trained in the tab, the exercises; it runs in any browser with "
                    "nothing installed (Pyodide). Publish the folder on any static host.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--output", "-o", metavar="DIR", help="write the site into DIR")
    what.add_argument("--fetch-pyodide", metavar="DIR",
                      help="fetch Pyodide, its numpy and viz.js from the package registries "
                           "into DIR (each file checked by sha256), for --pyodide DIR")
    what.add_argument("--serve", metavar="DIR", help="serve a built folder on 127.0.0.1")
    p.add_argument("--pyodide", metavar="URL|DIR",
                   help="with --output: a Pyodide distribution, a URL or a folder filled by "
                        "--fetch-pyodide (copied into the site; works offline); default: "
                        "Pyodide's official CDN")
    p.add_argument("--port", metavar="N", type=port_number, default=8000,
                   help="with --serve: the port (default: %(default)s; 0: any free port)")
    p.set_defaults(run=run)


def serve(folder, port):
    """Serve `folder` on 127.0.0.1:port until Ctrl-C; prints the address first."""
    import functools
    import http.server
    import os

    if not os.path.isfile(os.path.join(folder, "index.html")):
        raise ValueError(f"--serve {folder}: no index.html there; build it with "
                         f"`microtensor course --output {folder}`")

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                          ".wasm": "application/wasm", ".js": "text/javascript",
                          ".mjs": "text/javascript", ".whl": "application/zip"}

        def log_message(self, *args):  # quiet: a page load is ~15 requests
            pass

    handler = functools.partial(Handler, directory=folder)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"serving {folder} at http://127.0.0.1:{server.server_address[1]}/ "
              f"(Ctrl-C stops)", flush=True)
        server.serve_forever()


def run(args):
    from models.course import fetch, site

    if args.pyodide is not None and args.output is None:
        raise ValueError("--pyodide goes with --output DIR")
    if args.fetch_pyodide is not None:
        names = fetch.fetch(args.fetch_pyodide, log=lambda line: print(line, flush=True))
        print(f"{len(names)} files in {args.fetch_pyodide}, each checked by sha256; build with "
              f"`microtensor course --output SITE --pyodide {args.fetch_pyodide}`")
        return 0
    if args.serve is not None:
        try:
            serve(args.serve, args.port)
        except KeyboardInterrupt:
            pass
        return 0
    index = site.build(args.output, args.pyodide)
    print(f"wrote {index}; preview: microtensor course --serve {args.output}")
    return 0
