"""The capture's back ends (cpu, sim, gpu), one package each."""
