from raytop.cli import main

main()
