"""placeholder"""
class KernelDependenceNetwork: pass
