# cli.mk - the lockstep command; its parts (all but main.c) also form libcli.a for the tests.
CLI_SRCS := $(filter-out cli/main.c,$(wildcard cli/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/%.o)
LIBCLI := $(B)/libcli.a
LOCKSTEP_BIN := $(B)/bin/lockstep
CLI_LIBS = $(call pc_libs,jansson libcurl libcrypto) -lm

EXTRA_CFLAGS_cli = $(call pc_cflags,jansson libcurl)

$(LIBCLI): $(CLI_OBJS) $(COMMON_JSON_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The job-token module (OpenSSL) is shared with lockstepd and the SPANK plugin.
CLI_TOKEN_OBJ := $(B)/common/crypto/token.o

$(LOCKSTEP_BIN): $(B)/cli/main.o $(VERSION_OBJ) $(LIBCLI) $(CLI_TOKEN_OBJ) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(HARDEN_LD) $(CLI_LIBS)

# The bash completion script, written by the command from its own tables (cli/completion.c).
LOCKSTEP_COMPLETION := $(B)/share/bash-completion/completions/lockstep
$(LOCKSTEP_COMPLETION): $(LOCKSTEP_BIN)
	@mkdir -p $(@D)
	$(LOCKSTEP_BIN) completion bash >$@.tmp && mv $@.tmp $@

ALL_TARGETS += $(LOCKSTEP_BIN) $(LOCKSTEP_COMPLETION)
INSTALL_BIN += $(LOCKSTEP_BIN)
INSTALL_COMPLETION += $(LOCKSTEP_COMPLETION)

# The parser's test links the whole command table, so every command's objects.
TEST_OBJS_test_cli_args = $(VERSION_OBJ) $(CLI_TOKEN_OBJ)
