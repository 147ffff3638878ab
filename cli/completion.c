/* completion.c - `lockstep completion bash`: the bash completion script, written from the command table and each
 * command's options (cli/args.h), so that it cannot fall out of step with them. `make install` installs it. */
#include "cli/completion.h"

#include <string.h>

#include "cli/cli.h"

/* The script's fixed part: walk the words typed so far (the subcommand, its positional arguments, "--", an option
 * whose value is being typed, as --opt VALUE or --opt=VALUE, which bash splits at '='), then complete from the
 * tables below it. */
static const char SCRIPT_HEAD[] =
    "# bash completion for lockstep, written by `lockstep completion bash` from the command's own tables.\n"
    "\n"
    "# _lockstep_reply SPEC WORD: complete WORD as SPEC says: @file, @dir, @program, @subcommand, or words; one\n"
    "# candidate a line (file names may hold blanks), so the word lists are given to compgen a word a line too\n"
    "_lockstep_reply() {\n"
    "  local IFS=$'\\n' words=$1\n"
    "  [[ $1 == @subcommand ]] && words=$_lockstep_commands\n"
    "  case $1 in\n"
    "    @file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$2\")) ;;\n"
    "    @dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$2\")) ;;\n"
    "    @program) COMPREPLY=($(compgen -c -- \"$2\")) ;;\n"
    "    '' | -) COMPREPLY=() ;;\n"
    "    *) COMPREPLY=($(compgen -W \"${words// /$'\\n'}\" -- \"$2\")) ;;\n"
    "  esac\n"
    "}\n"
    "\n"
    "_lockstep() {\n"
    "  local cur=${COMP_WORDS[COMP_CWORD]} cmd= opt= npos=0 dashdash=0 i w spec\n"
    "  COMPREPLY=()\n"
    "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    "    w=${COMP_WORDS[i]}\n"
    "    if ((dashdash)); then ((npos++)); continue; fi\n"
    "    case $w in\n"
    "      --) [[ -n $cmd ]] && dashdash=1 ;;\n"
    "      -?*)\n"
    "        spec=$(_lockstep_value \"$cmd\" \"$w\")\n"
    "        if [[ ${COMP_WORDS[i + 1]} == = ]]; then\n"
    "          if ((i + 2 >= COMP_CWORD)); then opt=$w; break; fi\n"
    "          ((i += 2))\n"
    "        elif [[ -n $spec ]]; then\n"
    "          if ((i + 1 == COMP_CWORD)); then opt=$w; break; fi\n"
    "          ((i++))\n"
    "        fi ;;\n"
    "      *) if [[ -z $cmd ]]; then cmd=$w; else ((npos++)); fi ;;\n"
    "    esac\n"
    "  done\n"
    "  [[ $cur == = ]] && cur=\n"
    "  if [[ -n $opt ]]; then\n"
    "    _lockstep_reply \"$(_lockstep_value \"$cmd\" \"$opt\")\" \"$cur\"\n"
    "  elif [[ -z $cmd ]]; then\n"
    "    if [[ $cur == -* ]]; then _lockstep_reply \"$(_lockstep_options '')\" \"$cur\"\n"
    "    else _lockstep_reply @subcommand \"$cur\"; fi\n"
    "  elif [[ $cur == -* ]] && ((!dashdash)); then\n"
    "    _lockstep_reply \"$(_lockstep_options \"$cmd\")\" \"$cur\"\n"
    "  else\n"
    "    _lockstep_reply \"$(_lockstep_positional \"$cmd\" $((npos > 2 ? 2 : npos)))\" \"$cur\"\n"
    "  fi\n"
    "}\n";

/* put_words - the option words of `cmd` (NULL: before any command) as completion offers them. */
static void put_words(FILE *out, const cli_command *cmd)
{
    for (const cli_opt *o = cmd ? cmd->opts : NULL; o && (o->name || o->key); o++) {
        if (o->name)
            fprintf(out, "--%s ", o->name);
        if (o->key < CLI_KEY_LONG)
            fprintf(out, "-%c ", o->key);
    }
    for (const cli_opt *o = cli_global_opts; o->name; o++)
        if (cli_takes_global(cmd, o))
            fprintf(out, "--%s ", o->name);
    fprintf(out, cmd ? "--help" : "--help --version");
}

/* put_value - the case arm of _lockstep_value for option `o` of the command called `name` ("*" for any). */
static void put_value(FILE *out, const char *name, const cli_opt *o)
{
    if (!o->arg)
        return;
    const char *spec = o->complete ? o->complete : "-";
    fprintf(out, "    ");
    if (o->name && *name == '*')
        fprintf(out, "*\" --%s\"", o->name);
    else if (o->name)
        fprintf(out, "\"%s --%s\"", name, o->name);
    if (o->name && o->key < CLI_KEY_LONG)
        fprintf(out, " | ");
    if (o->key < CLI_KEY_LONG)
        fprintf(out, "\"%s -%c\"", name, o->key);
    fprintf(out, ") echo '%s' ;;\n", spec);
}

int cli_completion_bash(FILE *out)
{
    fputs(SCRIPT_HEAD, out);
    fprintf(out, "\n_lockstep_commands='");
    for (const cli_command *const *c = cli_commands; *c; c++)
        fprintf(out, "%s%s", c == cli_commands ? "" : " ", (*c)->name);
    fprintf(out, "'\n\n# _lockstep_options COMMAND: the options it takes ('' before the command)\n"
                 "_lockstep_options() {\n  case $1 in\n    '') echo '");
    put_words(out, NULL);
    fprintf(out, "' ;;\n");
    for (const cli_command *const *c = cli_commands; *c; c++) {
        fprintf(out, "    %s) echo '", (*c)->name);
        put_words(out, *c);
        fprintf(out, "' ;;\n");
    }
    fprintf(out, "  esac\n}\n\n# _lockstep_value COMMAND OPTION: how its value completes; - for free text, '' for "
                 "a switch\n_lockstep_value() {\n  case \"$1 $2\" in\n");
    for (const cli_command *const *c = cli_commands; *c; c++)
        for (const cli_opt *o = (*c)->opts; o && (o->name || o->key); o++)
            put_value(out, (*c)->name, o);
    for (const cli_opt *o = cli_global_opts; o->name; o++)
        put_value(out, "*", o);
    fprintf(out, "  esac\n}\n\n# _lockstep_positional COMMAND N: how its N-th argument completes (2: the rest)\n"
                 "_lockstep_positional() {\n  case \"$1 $2\" in\n");
    for (const cli_command *const *c = cli_commands; *c; c++)
        for (int i = 0; i < 3; i++)
            if ((*c)->complete[i])
                fprintf(out, "    \"%s %d\") echo '%s' ;;\n", (*c)->name, i, (*c)->complete[i]);
    fprintf(out, "  esac\n}\n\ncomplete -F _lockstep lockstep\n");
    return fflush(out) == 0 ? CLI_OK : CLI_BAD_INPUT;
}

/* cmd_completion - `lockstep completion bash`. */
static int cmd_completion(const cli_args *a)
{
    if (a->npos != 1 || strcmp(a->pos[0], "bash"))
        return cli_args_fail(a, "completion writes a script for bash only: lockstep completion bash");
    return cli_completion_bash(stdout);
}

const cli_command cli_cmd_completion = {
    .name = "completion",
    .run = cmd_completion,
    .synopsis = "completion bash",
    .summary = "the bash completion script (make install and the Debian package install it)",
    .complete = {"bash"},
};
