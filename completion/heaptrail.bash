# bash completion for heaptrail.
#
# The commands and their options come from heaptrail itself
# (`heaptrail --list-options [COMMAND]`, which reads them from the help),
# so they are always those of the heaptrail being completed.

_heaptrail()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local ht=${COMP_WORDS[0]}
    COMPREPLY=()
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W "$("$ht" --list-options 2>/dev/null) --help --version" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]} name arg
    local -a opts=()
    local -A takes=()
    while IFS=$'\t' read -r name arg; do
        opts+=("$name")
        takes[$name]=$arg
    done < <("$ht" --list-options "$cmd" 2>/dev/null)

    # run: from the program on, the program's own completion
    if [[ $cmd == run ]]; then
        local i=2
        while (( i < COMP_CWORD )); do
            local w=${COMP_WORDS[i]}
            if [[ $w == -- ]]; then
                (( i++ ))
                break
            elif [[ $w == -* ]]; then
                [[ $w != *=* && -n ${takes[$w]} ]] && (( i++ ))
                (( i++ ))
            else
                break
            fi
        done
        if (( i < COMP_CWORD )) || [[ ${COMP_WORDS[i-1]} == -- && i == COMP_CWORD ]]; then
            if declare -F _command_offset >/dev/null; then
                _command_offset "$i"
            elif (( i == COMP_CWORD )); then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    fi

    # the value of the option before
    if [[ $prev == -* && -n ${takes[$prev]+set} && -n ${takes[$prev]} ]]; then
        arg=${takes[$prev]}
        if [[ $arg == *'|'* ]]; then
            COMPREPLY=($(compgen -W "${arg//|/ }" -- "$cur"))
        elif [[ $arg == FILE || $arg == OUT ]]; then
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${opts[*]} --help" -- "$cur"))
        return
    fi
    # traces, and for run the program
    compopt -o filenames 2>/dev/null
    if [[ $cmd == run ]]; then
        COMPREPLY=($(compgen -c -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}

complete -F _heaptrail heaptrail
