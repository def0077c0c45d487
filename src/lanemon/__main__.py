import sys

from lanemon.cli import main

sys.exit(main())
