import sys

from fusion_alias.bench.main import main

if __name__ == "__main__":
    sys.exit(main())
