import sys

from lanemon.cli.main import main

sys.exit(main())
