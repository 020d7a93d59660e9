"""The order of the test run for pytest-xdist (pyproject.toml: ``-n auto --dist loadfile
--no-loadscope-reorder``): whole files go to the workers in collection order, so the
files whose shared simulations take minutes come first and the workers finish
together. (xdist's own order, by the number of tests, left the few long lockstep and
synthesis tests to the end, on one worker.)"""

# the slowest files, slowest first (seconds on one core, session 19, `--durations`):
# test_vector 390 (two pysim runs of all its cases), test_vector_cycle 200, test_synth
# 175, test_core 110, test_datamove 95, test_core_vector 60, test_matrix 35,
# test_export 35, test_boards 25; every other file keeps its place after them
SLOW_FIRST = ("hw/test_vector.py", "hw/test_vector_cycle.py", "hw/test_synth.py", "hw/test_core.py",
              "hw/test_datamove.py", "hw/test_core_vector.py", "hw/test_matrix.py", "hw/test_export.py",
              "hw/test_boards.py")


def pytest_collection_modifyitems(session, config, items):
    tests = config.rootpath / "tests"

    def rank(item):
        try:
            name = item.path.relative_to(tests).as_posix()
        except ValueError:
            return len(SLOW_FIRST)
        return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)            # stable: the order within a file and among the rest stays
