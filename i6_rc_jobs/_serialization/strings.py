"""String literals as the written config spells them."""


def str_code(value: str) -> str:
    """A string literal in black's style: double quotes, unless that needs more escapes than single quotes."""
    code = repr(value)
    if code[0] == "'" and '"' not in value:
        return f'"{code[1:-1]}"'
    return code
