"""Models built out of the manager and cached by what they depend on: ``build(builder, *args, **kwargs)`` returns
what ``builder(*args, **kwargs)`` returns, a ReturnnCommonSerializer, from the cache if nothing the build depended
on has changed, else built in a process of its own (forked from a build server that has imported the libraries).
See docs/guide/builds.md."""
