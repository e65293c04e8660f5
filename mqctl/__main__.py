from mqctl.cli import main

raise SystemExit(main())
