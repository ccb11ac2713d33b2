"""Maintainers: the screenshot of repair.json's page in the README (docs/repair-page.png).

    python3 lab.py run tests/maintainers/make_screenshot.py

Writes the page with view.py, opens it in Debian's chromium through Playwright (no browser
download), and saves the top of the page, the verdict and the first turn, as a PNG under
200 KB. It overwrites the file each time.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__":  # run directly, not through lab.py: the lab is one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

HERE = Path(__file__).resolve().parents[2]
SCREENSHOT = HERE / "docs" / "repair-page.png"
LIMIT = 200_000  # bytes


def main(argv=None):
    argparse.ArgumentParser(
        description="Write docs/repair-page.png, the README's screenshot of repair.json's page.",
        epilog="exit codes: 0 written; 2 chromium or Playwright is missing, or it came out "
        f"larger than {LIMIT:,} bytes",
    ).parse_args(argv)
    chromium = shutil.which("chromium")
    if not chromium:
        print("error: no chromium here (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        view = [sys.executable, str(HERE / "view.py"), str(HERE / "recordings" / "repair.json")]
        subprocess.run([*view, "--out", folder], check=True, capture_output=True)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 900, "height": 1100})
            page.emulate_media(color_scheme="light")
            page.goto((Path(folder) / "repair.html").as_uri())
            page.screenshot(path=str(SCREENSHOT))
            browser.close()
    size = SCREENSHOT.stat().st_size
    print(f"{SCREENSHOT.relative_to(HERE)}: {size:,} bytes")
    if size > LIMIT:
        print(f"error: larger than {LIMIT:,} bytes", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
