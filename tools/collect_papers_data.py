#!/usr/bin/env python
"""Build the folder of the papers' data sets from local clones of the authors' repositories.

ikdr does not ship the data sets the papers were measured on (Cancer, Face, the KDAC and
KNet Moons, Spiral, the Flower image). They are in two of the authors' public
repositories, under other names; this script copies each file it needs from local clones
(cloned by the user: it uses no network) into one folder, under the name ikdr's tests and
benchmarks read, and checks every file's shape on the way:

    git clone <the ISM repository> ism               # neu-spiral/ISM
    git clone <the KernelNet repository> kernelnet   # neu-spiral/KernelNet
    python tools/collect_papers_data.py --ism ism --kernelnet kernelnet --out papers-data
    export IKDR_SHARED_DATA=$PWD/papers-data

The table from upstream file to ikdr's name is :data:`MAPPING` (and the user guide's
"Reproducing the papers" page). A file whose shape is not the expected one (another
version of the repository) is reported and not copied, and so is a different file
already in the folder (``--force`` replaces it). Exit codes: 0 every file in place, 1 some
file missing, of another shape or in the way (the others are copied), 2 usage error.
"""
from __future__ import annotations

import argparse
import filecmp
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

#: the clones the script reads, by their command-line option: the repository each is
REPOSITORIES = {"ism": "neu-spiral/ISM", "kernelnet": "neu-spiral/KernelNet"}


@dataclass(frozen=True)
class DataFile:
    """One upstream file: where it is in which clone, the name ikdr reads, its shape."""

    clone: str       #: a key of REPOSITORIES
    upstream: str    #: path inside the clone
    name: str        #: the name ikdr's tests and benchmarks read
    shape: tuple     #: (rows, columns) of a CSV file (columns 1 for a label file), or
                     #: (width, height) of a PNG image
    what: str        #: what the file holds


MAPPING = (
    DataFile("kernelnet", "datasets/cancer/cancer.csv", "cancer_683x9.csv", (683, 9),
             "Wisconsin breast cancer (original), rows with missing values dropped"),
    DataFile("kernelnet", "datasets/cancer/cancer_label.csv", "cancer_683x9_label.csv", (683, 1),
             "its class, 2 (benign) or 4 (malignant)"),
    DataFile("ism", "data_sets/face_624_20.csv", "face_624x20.csv", (624, 20),
             "CMU face images reduced to 20 principal components"),
    DataFile("ism", "data_sets/face_624_20_original_label.csv", "face_624x20_identity_label.csv",
             (624, 1), "the person, 20 identities"),
    DataFile("ism", "data_sets/face_624_20_alt_label.csv", "face_624x20_pose_label.csv",
             (624, 1), "the pose, 4 poses"),
    DataFile("ism", "data_sets/moon_400x4.csv", "moon_400x4.csv", (400, 4),
             "two moons in columns 1-2, two Gaussian clusters in 3-4 (KDAC's Moon)"),
    DataFile("ism", "data_sets/moon_400x4_original_label.csv", "moon_400x4_original_label.csv",
             (400, 1), "the original clustering, the Gaussians"),
    DataFile("ism", "data_sets/moon_400x4_alt_label.csv", "moon_400x4_alt_label.csv", (400, 1),
             "the alternative clustering, the moons"),
    DataFile("ism", "data_sets/Flower3.png", "flower.png", (350, 256),
             "the Flower image of the alternative segmentation (a 256-colour palette)"),
    DataFile("kernelnet", "datasets/moon/moon.csv", "moon_1000x2.csv", (1000, 2),
             "two moons (KNet's Moon)"),
    DataFile("kernelnet", "datasets/moon/moon_label.csv", "moon_1000x2_label.csv", (1000, 1),
             "the moon of each point"),
    DataFile("kernelnet", "datasets/spiral/spiral.csv", "spiral.csv", (3000, 2),
             "a three-arm spiral (KNet's Spiral)"),
    DataFile("kernelnet", "datasets/spiral/spiral_label.csv", "spiral_label.csv", (3000, 1),
             "the arm of each point"),
)


def shape_of(path: Path, image: bool) -> tuple:
    """(rows, columns) of a comma-separated file, or (width, height) of a PNG image."""
    if image:
        with open(path, "rb") as fh:
            head = fh.read(24)
        if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
            raise ValueError("not a PNG image")
        return struct.unpack(">II", head[16:24])
    rows, columns = 0, set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rows += 1
                columns.add(line.count(",") + 1)
    if len(columns) > 1:
        raise ValueError(f"rows of {sorted(columns)} columns")
    return rows, columns.pop() if columns else 0


def collect(clones: dict, out: Path, *, force: bool = False) -> list:
    """Copy every file of :data:`MAPPING` whose clone is in ``clones`` (key -> path) into
    ``out``; returns the problems, one line each (an empty list: all copied)."""
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    for entry in MAPPING:
        if entry.clone not in clones:
            problems.append(f"{entry.name}: no clone of {REPOSITORIES[entry.clone]} given "
                            f"(--{entry.clone})")
            continue
        source = Path(clones[entry.clone]) / entry.upstream
        target = out / entry.name
        if not source.is_file():
            problems.append(f"{entry.name}: {entry.upstream} is not in the clone of "
                            f"{REPOSITORIES[entry.clone]} ({clones[entry.clone]})")
            continue
        try:
            shape = tuple(shape_of(source, entry.name.endswith(".png")))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"{entry.name}: {entry.upstream} cannot be read ({exc})")
            continue
        if shape != entry.shape:
            problems.append(f"{entry.name}: {entry.upstream} is {shape[0]} x {shape[1]}, "
                            f"expected {entry.shape[0]} x {entry.shape[1]} (another version of "
                            "the repository?); not copied")
            continue
        if target.exists() and not force:
            if not filecmp.cmp(source, target, shallow=False):   # the same file is fine
                problems.append(f"{entry.name}: {target} exists and differs "
                                "(--force replaces it)")
            continue
        shutil.copyfile(source, target)
    return problems


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/collect_papers_data.py",
        description="Copy the papers' data sets from local clones of the authors' repositories "
                    "into one folder, under the names ikdr reads (no network).")
    for key, repository in REPOSITORIES.items():
        parser.add_argument(f"--{key}", metavar="CLONE", help=f"a local clone of {repository}")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the folder to fill (point IKDR_SHARED_DATA at it)")
    parser.add_argument("--force", action="store_true", help="replace files already in DIR")
    args = parser.parse_args(argv)
    clones = {key: getattr(args, key) for key in REPOSITORIES if getattr(args, key)}
    if not clones:
        parser.error("give at least one clone: " + ", ".join(f"--{k}" for k in REPOSITORIES))
    for key, path in clones.items():
        if not Path(path).is_dir():
            parser.error(f"--{key} {path}: no such folder")
    problems = collect(clones, Path(args.out), force=args.force)
    copied = len(MAPPING) - len(problems)
    print(f"{copied} of {len(MAPPING)} files in {args.out}")
    for line in problems:
        print(f"  {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
