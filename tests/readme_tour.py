"""The README's Python blocks written out as files of a user's project: `python tests/readme_tour.py
DIR` writes `tour_0.py`, `tour_1.py` there (.ci/run type-checks them against the built wheel;
tests/project/test_user_types.py against the clone)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def write_tour(folder: Path) -> list[Path]:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)
    paths = [folder / f"tour_{i}.py" for i in range(len(blocks))]
    for path, block in zip(paths, blocks, strict=True):
        path.write_text(block)
    return paths


if __name__ == "__main__":
    print(*write_tour(Path(sys.argv[1])), sep="\n")
