"""Prints the functions with the most own time (and cumulative time) of one or more cProfile files.

Run: python3 bench/profile/summarize-pstats.py bench/profiles/worker-*.prof
"""
import pstats
import sys


def main():
    stats = pstats.Stats(*sys.argv[1:])
    stats.strip_dirs()
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
