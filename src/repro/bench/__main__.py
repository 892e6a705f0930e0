import sys

from repro.bench.main import main

sys.exit(main())
