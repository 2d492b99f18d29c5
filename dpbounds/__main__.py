from dpbounds.cli import main

raise SystemExit(main())
