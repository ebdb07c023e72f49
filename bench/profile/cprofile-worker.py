"""Runs Mimic's worker script under cProfile and writes the profile when the worker exits.

The worker leaves through os._exit (so user threads cannot keep it alive), which skips atexit:
the profile is written from a wrapped os._exit instead. Output: worker-<pid>.prof in
MIMIC_BENCH_PROFILE_DIR; read it with `python3 -m pstats` or bench/profile/summarize-pstats.py.
"""
import cProfile
import os
import runpy
import sys


def main():
    out_dir = os.environ["MIMIC_BENCH_PROFILE_DIR"]
    args = [a for a in sys.argv[1:] if a != "-u"]
    sys.argv = args
    profile = cProfile.Profile()
    real_exit = os._exit

    def exit_with_profile(code):
        profile.disable()
        profile.dump_stats(os.path.join(out_dir, f"worker-{os.getpid()}.prof"))
        real_exit(code)

    os._exit = exit_with_profile
    profile.enable()
    runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
