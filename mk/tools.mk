# mk/tools.mk — the CLI (tools/): tests of the one option parser.
#
# test_cli_opts links tools/cli_opts.c alone (unit tests of the parser);
# test_cli_options.sh runs every subcommand's --help and usage errors
# through the built CLI (usage text = accepted options, strict numbers);
# test_cli_msl.py runs `heapgraph msl` on generated stack-logging files.

CLI_OPTS_TEST := $(BUILD)/tests/test_cli_opts
TEST_PROGS    += $(CLI_OPTS_TEST)
TEST_SCRIPTS  += $(CLI_OPTS_TEST) tests/tools/test_cli_options.sh
TEST_SCRIPTS  += tests/tools/test_cli_msl.py

$(CLI_OPTS_TEST): tests/tools/test_cli_opts.c tools/cli_opts.c tools/cli_opts.h tests/hg_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(CFLAGS) -o $@ tests/tools/test_cli_opts.c tools/cli_opts.c $(LDFLAGS)
