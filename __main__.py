from kernelscope.cli.main import main

main()
