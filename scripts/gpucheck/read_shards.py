#!/usr/bin/env python3
"""GPU check step (f): reads every Parquet shard of a prepared directory with pyarrow (another
implementation than parquet-go, which wrote them), one JSON line per file. Without pyarrow it
prints a "skipped" status and exits 0.

  read_shards.py PREPARED_DIR
"""

import glob
import json
import os
import sys


def main():
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        print(json.dumps({"step": "skip", "skipped": f"pyarrow absent ({e})"}))
        return 0
    rc = 0
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.parquet")))
    if not files:
        print(json.dumps({"step": "parquet", "file": sys.argv[1], "ok": False, "error": "no .parquet files"}))
        return 1
    for f in files:
        try:
            t = pq.read_table(f)
            print(json.dumps({"step": "parquet", "file": os.path.relpath(f, sys.argv[1]), "rows": t.num_rows,
                              "columns": ",".join(t.column_names), "ok": True}))
        except Exception as e:
            rc = 1
            print(json.dumps({"step": "parquet", "file": f, "ok": False, "error": f"{type(e).__name__}: {e}"[:300]}))
    return rc


if __name__ == "__main__":
    sys.exit(main())
