"""The image's HEALTHCHECK: GET /api/readyz on this container's own port, exit 0 when ready.

readyz needs the token when API_TOKEN is set (only healthz is open), so the check sends it;
it runs inside the container, so the token never leaves it. Standard library only: the
check must not import the app (seconds of start-up every interval)."""

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    port = os.environ.get("PORT") or "8000"
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/readyz")
    token = os.environ.get("API_TOKEN")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=8) as response:
            return 0 if response.status == 200 else 1
    except urllib.error.HTTPError as e:
        print(f"readyz answered {e.code}: {e.read(500).decode(errors='replace')}", file=sys.stderr)
    except OSError as e:
        print(f"readyz unreachable: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
