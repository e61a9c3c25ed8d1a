"""Workspace sizing: the scratch buffers the kernel families a plan runs need
(`sizing.WORKSPACES`, one `terms.WorkspaceTerm` per family workspace). The families
themselves live in `accy.passes.families`."""
